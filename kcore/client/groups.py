"""Consumer-group administration: list, describe, committed offsets, reset,
delete; what `kafka-consumer-groups` does, on kcore.protocol.

Every call goes to the group's coordinator (FindCoordinator first), so it
works against any Kafka-compatible cluster, not only a single node.

Assignment bytes use the consumer protocol's layout (Kafka's
ConsumerProtocolAssignment): `i16 version | [topic string, [i32 partition]]
| user_data bytes` (v1+ adds nothing before the topics).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kcore.client.errors import KafkaError
from kcore.client.metadata import TopicPartition
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import GROUP_KEY_TYPE
from kcore.protocol.errors import ErrorCode


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = field(default_factory=tuple)


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """Partitions of a consumer-protocol assignment; empty for other
    protocols or malformed bytes (a describe must not fail on them)."""
    if not data or len(data) < 6:
        return ()
    try:
        position = 2
        count, = struct.unpack_from(">i", data, position)
        position += 4
        partitions = []
        for _ in range(max(count, 0)):
            length, = struct.unpack_from(">h", data, position)
            topic = bytes(data[position + 2:position + 2 + length]).decode()
            position += 2 + length
            n, = struct.unpack_from(">i", data, position)
            position += 4
            for index in struct.unpack_from(f">{n}i", data, position):
                partitions.append(TopicPartition(topic, index))
            position += 4 * n
        return tuple(partitions)
    except (struct.error, UnicodeDecodeError):
        return ()


class GroupAdmin:
    """Group calls through a KafkaClient. Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def find_coordinator(self, group_id: str) -> tuple[int, str, int]:
        """(node id, host, port) of the broker coordinating the group."""
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.FIND_COORDINATOR,
                                            {"key": group_id, "key_type": GROUP_KEY_TYPE})
        if response.error_code:
            raise KafkaError(response.error_code, getattr(response, "error_message", None),
                             context=f"group {group_id}")
        return response.node_id, response.host, response.port

    async def coordinator(self, group_id: str):
        broker_id, _, _ = await self.find_coordinator(group_id)
        return await self.client.connection(broker_id)

    async def list_groups(self) -> list[tuple[str, str]]:
        """(group id, protocol type) of every group the cluster knows."""
        await self.client.refresh_metadata()
        groups = []
        for broker_id in self.client.metadata.brokers:
            connection = await self.client.connection(broker_id)
            response = await connection.request(ApiKey.LIST_GROUPS, {})
            if response.error_code:
                raise KafkaError(response.error_code, context="ListGroups")
            groups += [(g.group_id, g.protocol_type) for g in response.groups]
        return sorted(groups)

    async def describe(self, group_id: str) -> GroupDescription:
        """A classic group (DescribeGroups) or a consumer-protocol group
        (ConsumerGroupDescribe, which brokers of Kafka 4 answer for the
        groups DescribeGroups calls not found); an unknown group is Dead."""
        connection = await self.coordinator(group_id)
        response = await connection.request(ApiKey.DESCRIBE_GROUPS, {"groups": [group_id]})
        group = response.groups[0]
        if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (not group.error_code and group.group_state == "Dead"):
            described = await self._describe_consumer_group(connection, group_id)
            return described or GroupDescription(group_id, "Dead", "", "")
        if group.error_code:
            raise KafkaError(group.error_code, context=f"group {group_id}")
        members = tuple(
            MemberDescription(m.member_id, getattr(m, "group_instance_id", None), m.client_id,
                              m.client_host, decode_assignment(m.member_assignment))
            for m in group.members)
        return GroupDescription(group.group_id, group.group_state, group.protocol_type,
                                group.protocol_data, members)

    async def _describe_consumer_group(self, connection, group_id: str) -> GroupDescription | None:
        if ApiKey.CONSUMER_GROUP_DESCRIBE not in connection.broker_versions:
            return None
        response = await connection.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": [group_id]})
        group = response.groups[0]
        if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        if group.error_code:
            raise KafkaError(group.error_code, group.error_message, context=f"group {group_id}")
        members = tuple(
            MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host,
                              tuple(TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions
                                    for p in t.partitions))
            for m in group.members)
        return GroupDescription(group_id, group.group_state, "consumer", group.assignor_name, members)

    async def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """Every committed offset of the group (OffsetFetch, all topics)."""
        connection = await self.coordinator(group_id)
        response = await connection.request(ApiKey.OFFSET_FETCH,
                                            {"group_id": group_id, "topics": None})
        if getattr(response, "error_code", 0):
            raise KafkaError(response.error_code, context=f"group {group_id}")
        committed = {}
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise KafkaError(part.error_code, context=f"{topic.name}-{part.partition_index}")
                if part.committed_offset >= 0:
                    committed[TopicPartition(topic.name, part.partition_index)] = part.committed_offset
        return committed

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        """Commit as an outsider (generation -1): the coordinator accepts this
        only while the group has no active members, as for Kafka's tool."""
        connection = await self.coordinator(group_id)
        by_topic: dict[str, list[dict]] = {}
        for tp, offset in sorted(offsets.items(), key=lambda item: (item[0].topic, item[0].partition)):
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "committed_offset": offset,
                 "committed_metadata": ""})
        response = await connection.request(ApiKey.OFFSET_COMMIT, {
            "group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]})
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise KafkaError(part.error_code, context=f"{topic.name}-{part.partition_index}")

    async def delete(self, group_id: str) -> None:
        connection = await self.coordinator(group_id)
        response = await connection.request(ApiKey.DELETE_GROUPS, {"groups_names": [group_id]})
        result = response.results[0]
        if result.error_code:
            raise KafkaError(result.error_code, context=f"group {group_id}")

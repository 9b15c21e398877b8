"""Share-group administration (KIP-932): list, describe with start offsets
and lag, reset start offsets, delete; what `kafka-share-groups` does, on
kcore.protocol.

Describe, offsets and deletion go to the group's coordinator (FindCoordinator
first); listing asks every broker (ListGroups, the groups of protocol type
"share").
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kcore.client.errors import KafkaError
from kcore.client.groups import GroupAdmin
from kcore.client.metadata import TopicPartition
from kcore.protocol.api_keys import ApiKey

SHARE_PROTOCOL_TYPE = "share"


@dataclass(frozen=True)
class ShareMemberDescription:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[ShareMemberDescription, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ShareOffset:
    start_offset: int
    lag: int


class ShareGroupAdmin:
    """Share-group calls through a KafkaClient. Owned by one event loop."""

    def __init__(self, client):
        self.client = client
        self.groups = GroupAdmin(client)

    async def list_groups(self) -> list[str]:
        return sorted(group_id for group_id, kind in await self.groups.list_groups()
                      if kind == SHARE_PROTOCOL_TYPE)

    async def describe(self, group_id: str) -> ShareGroupDescription:
        connection = await self.groups.coordinator(group_id)
        response = await connection.request(ApiKey.SHARE_GROUP_DESCRIBE,
                                            {"group_ids": [group_id], "include_authorized_operations": False})
        group = response.groups[0]
        if group.error_code:
            raise KafkaError(group.error_code, group.error_message, context=f"group {group_id}")
        members = tuple(ShareMemberDescription(
            m.member_id, m.member_epoch, m.client_id, m.client_host,
            tuple(TopicPartition(tp.topic_name, index) for tp in m.assignment.topic_partitions
                  for index in tp.partitions)) for m in group.members)
        return ShareGroupDescription(group.group_id, group.group_state, group.group_epoch,
                                     group.assignment_epoch, members)

    async def offsets(self, group_id: str) -> dict[TopicPartition, ShareOffset]:
        """Every share-partition's start offset and lag (-1: not known)."""
        connection = await self.groups.coordinator(group_id)
        response = await connection.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                            {"groups": [{"group_id": group_id, "topics": None}]})
        group = response.groups[0]
        if group.error_code:
            raise KafkaError(group.error_code, group.error_message, context=f"group {group_id}")
        found = {}
        for topic in group.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise KafkaError(part.error_code, context=f"{topic.topic_name}-{part.partition_index}")
                found[TopicPartition(topic.topic_name, part.partition_index)] = ShareOffset(
                    part.start_offset, getattr(part, "lag", -1))
        return found

    async def alter_offsets(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        connection = await self.groups.coordinator(group_id)
        by_topic: dict[str, list[dict]] = {}
        for tp, offset in sorted(offsets.items(), key=lambda item: (item[0].topic, item[0].partition)):
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": offset})
        response = await connection.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, {
            "group_id": group_id,
            "topics": [{"topic_name": name, "partitions": parts} for name, parts in by_topic.items()]})
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message, context=f"group {group_id}")
        for topic in response.responses:
            for part in topic.partitions:
                if part.error_code:
                    raise KafkaError(part.error_code, context=f"{topic.topic_name}-{part.partition_index}")

    async def delete_offsets(self, group_id: str, topics: list[str]) -> None:
        connection = await self.groups.coordinator(group_id)
        response = await connection.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, {
            "group_id": group_id, "topics": [{"topic_name": topic} for topic in topics]})
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message, context=f"group {group_id}")
        for topic in response.responses:
            if topic.error_code:
                raise KafkaError(topic.error_code, context=f"topic {topic.topic_name}")

    async def delete(self, group_id: str) -> None:
        await self.groups.delete(group_id)

    async def set_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """Set share configs on every broker (kcore keeps them per broker)."""
        await self.client.refresh_metadata()
        body = {"resources": [{"resource_type": 32, "resource_name": group_id, "configs": [
            {"name": name, "config_operation": 0, "value": value} for name, value in configs.items()]}],
            "validate_only": False}
        for broker_id in self.client.metadata.brokers:
            connection = await self.client.connection(broker_id)
            response = await connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, body)
            for result in response.responses:
                if result.error_code:
                    raise KafkaError(result.error_code, result.error_message, context=f"group {group_id}")

"""What ShareFetch and ShareAcknowledge share: applying a request's
acknowledgement batches, and building the per-partition answers with the
endpoints of the leaders they name."""
from __future__ import annotations

import uuid
from typing import Any

from kcore.coordinator.share.manager import PartitionResult, SharePartitionManager
from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def acknowledgements(manager: SharePartitionManager, body, session, refused_topics: set[uuid.UUID],
                           results: dict[tuple[uuid.UUID, int], PartitionResult], renew: bool) -> None:
    """Apply each partition's acknowledgement batches (all or nothing per partition)."""
    for topic in body.topics:
        for partition in topic.partitions:
            batches = [(batch.first_offset, batch.last_offset, list(batch.acknowledge_types))
                       for batch in partition.acknowledgement_batches]
            if not batches:
                continue
            key = (topic.topic_id, partition.partition_index)
            if topic.topic_id in refused_topics:
                result = PartitionResult(*key, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         acknowledge_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         acknowledged=True)
            else:
                result = await manager.acknowledge(session.group_id, session.member_id, topic.topic_id,
                                                   partition.partition_index, batches, renew)
            results[key] = result


def answer_partitions(results: dict[tuple[uuid.UUID, int], PartitionResult], with_records: bool
                      ) -> tuple[list[dict[str, Any]], set[int]]:
    """The topics of an answer (partitions with something to say), and the
    leaders named by NOT_LEADER_OR_FOLLOWER answers."""
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (topic_id, index), result in results.items():
        if with_records and not (result.acquired is not None or result.acknowledged
                                 or result.error_code != ErrorCode.NONE):
            continue
        if ErrorCode.NOT_LEADER_OR_FOLLOWER in (result.error_code, result.acknowledge_error_code) \
                and result.leader[0] >= 0:
            leaders.add(result.leader[0])
        data: dict[str, Any] = {
            "partition_index": index,
            "error_code": result.error_code,
            "error_message": None,
            "current_leader": {"leader_id": result.leader[0], "leader_epoch": result.leader[1]},
        }
        if with_records:
            acquired = result.acquired
            data["acknowledge_error_code"] = result.acknowledge_error_code
            data["acknowledge_error_message"] = None
            # Kafka sends empty records, never null: librdkafka reads no null here.
            data["records"] = acquired.slices if acquired is not None and acquired.slices else b""
            data["acquired_records"] = [
                {"first_offset": r.first_offset, "last_offset": r.last_offset,
                 "delivery_count": r.delivery_count}
                for r in (acquired.ranges if acquired is not None else [])]
        else:
            data["error_code"] = result.acknowledge_error_code or result.error_code
        topics.setdefault(topic_id, []).append(data)
    return [{"topic_id": topic_id, "partitions": partitions}
            for topic_id, partitions in topics.items()], leaders


def node_endpoints(broker: BrokerFacade, context, leaders: set[int]) -> list[dict[str, Any]]:
    cache = broker.replica_manager.metadata_cache
    endpoints = []
    for broker_id in sorted(leaders):
        info = cache.broker(broker_id)
        if info is not None:
            host, port = info.endpoint(context.listener)
            endpoints.append({"node_id": broker_id, "host": host, "port": port, "rack": info.rack})
    return endpoints


def refused(error: tuple[int, str]) -> dict[str, Any]:
    """A whole request refused: the top-level error, nothing else."""
    return {"throttle_time_ms": 0, "error_code": error[0], "error_message": error[1],
            "responses": [], "node_endpoints": []}


def check_empty_group(broker: BrokerFacade, context, group_id: str, operation: AclOperation) -> int:
    """The refusal of a change to a share group's offsets: no right to
    ``operation`` on it, another broker coordinates it, or it has members."""
    if not group_allowed(broker, context, operation, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = broker.share_groups.coordinator
    code = coordinator.check_group(group_id)
    group = coordinator.groups.get(group_id)
    if code == ErrorCode.NONE and group is not None and group.members:
        return ErrorCode.NON_EMPTY_GROUP
    return code

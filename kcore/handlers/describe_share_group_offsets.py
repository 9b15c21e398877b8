"""DescribeShareGroupOffsets (key 90): each share-partition's start offset
(and, v1, its lag: records past the start offset not yet acknowledged or
archived, KIP-1226), read through the share coordinators. Topics are asked
for by name; null asks for every share-partition the group has state for.
Answered by the group's coordinator (NOT_COORDINATOR otherwise)."""
from __future__ import annotations

from typing import Any

from kcore.coordinator.share.records import ShareKey
from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    groups = []
    for group in request.body.groups:
        groups.append(await _group(broker, context, group))
    return {"throttle_time_ms": 0, "groups": groups}


async def _group(broker: BrokerFacade, context, group) -> dict[str, Any]:
    share = broker.share_groups
    group_id = group.group_id
    code: int = ErrorCode.NONE
    if not group_allowed(broker, context, AclOperation.DESCRIBE, group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        code = share.coordinator.check_group(group_id)
    if code != ErrorCode.NONE:
        return {"group_id": group_id, "topics": [], "error_code": code, "error_message": None}
    if group.topics is None:
        wanted: dict[str, list[int]] = {}
        for key in share.state_keys(group_id):
            name = broker.topic_ids.name_of(key.topic_id)
            if name is not None:
                wanted.setdefault(name, []).append(key.partition)
    else:
        wanted = {topic.topic_name: list(topic.partitions) for topic in group.topics}
    topics = []
    for name, indexes in wanted.items():
        topic_id = broker.topic_ids.id_of(name)
        known = broker.replica_manager.metadata_cache.contains(name)
        topics.append({"topic_name": name, "topic_id": topic_id, "partitions": [
            await _partition(broker, ShareKey(group_id, topic_id, index)) if known else
            _row(index, -1, -1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            for index in sorted(indexes)]})
    return {"group_id": group_id, "topics": topics, "error_code": ErrorCode.NONE, "error_message": None}


async def _partition(broker: BrokerFacade, key: ShareKey) -> dict[str, Any]:
    code, state = await broker.share_groups.persister.read(key, -1)
    if code != ErrorCode.NONE:
        return _row(key.partition, -1, -1, -1, code)
    if state is None:
        return _row(key.partition, -1, -1, -1, ErrorCode.NONE)
    lag = -1
    name = broker.topic_ids.name_of(key.topic_id)
    partition = broker.replica_manager.get(name, key.partition) if name is not None else None
    if partition is not None and partition.is_leader:
        done = sum(batch.last_offset - batch.first_offset + 1 for batch in state.state_batches
                   if batch.delivery_state in (2, 4))
        lag = max(partition.high_watermark - state.start_offset - done, 0)
    return _row(key.partition, state.start_offset, state.leader_epoch, lag, ErrorCode.NONE)


def _row(index: int, start_offset: int, leader_epoch: int, lag: int, code: int) -> dict[str, Any]:
    return {"partition_index": index, "start_offset": start_offset, "leader_epoch": leader_epoch,
            "lag": lag, "error_code": code, "error_message": None}

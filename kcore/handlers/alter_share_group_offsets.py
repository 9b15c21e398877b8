"""AlterShareGroupOffsets (key 91): set the start offsets of an empty share
group's share-partitions (NON_EMPTY_GROUP while it has members): each is
written with a new state epoch and nothing in flight, which fences the
share-partition's leader into reading it again."""
from __future__ import annotations

from typing import Any

from kcore.coordinator.share.records import ShareKey
from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_common import check_empty_group
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    share = broker.share_groups
    code = check_empty_group(broker, context, body.group_id, AclOperation.READ)
    if code != ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "responses": []}
    responses = []
    for topic in body.topics:
        topic_id = broker.topic_ids.id_of(topic.topic_name)
        partitions = []
        for partition in topic.partitions:
            partitions.append(await _alter(broker, topic.topic_name,
                                           ShareKey(body.group_id, topic_id, partition.partition_index),
                                           partition.start_offset))
        responses.append({"topic_name": topic.topic_name, "topic_id": topic_id, "partitions": partitions})
    share.coordinator.remember(body.group_id)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": responses}


async def _alter(broker: BrokerFacade, topic: str, key: ShareKey, start_offset: int) -> dict[str, Any]:
    share = broker.share_groups
    if broker.replica_manager.metadata_cache.partition(topic, key.partition) is None:
        return _result(key.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if start_offset < 0:
        return _result(key.partition, ErrorCode.INVALID_REQUEST)
    code, state = await share.persister.read(key, -1)
    if code != ErrorCode.NONE:
        return _result(key.partition, code)
    state_epoch = state.state_epoch + 1 if state is not None else 0
    code = await share.persister.initialize(key, state_epoch, start_offset)
    if code == ErrorCode.NONE:
        share.partitions.entries.drop(key)
        share.coordinator.remember(key.group_id).assigned_ever.add((key.topic_id, key.partition))
    return _result(key.partition, code)


def _result(index: int, code: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": code, "error_message": None}

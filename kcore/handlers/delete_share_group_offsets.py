"""DeleteShareGroupOffsets (key 92): forget an empty share group's state
for whole topics (NON_EMPTY_GROUP while it has members); its members start
again where share.auto.offset.reset says."""
from __future__ import annotations

from kcore.coordinator.share.records import ShareKey
from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_common import check_empty_group
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    share = broker.share_groups
    code = check_empty_group(broker, context, body.group_id, AclOperation.DELETE)
    group = share.coordinator.groups.get(body.group_id)
    if code != ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "responses": []}
    keys = share.state_keys(body.group_id)
    responses = []
    for topic in body.topics:
        topic_id = broker.topic_ids.id_of(topic.topic_name)
        result: int = ErrorCode.NONE
        if not broker.replica_manager.metadata_cache.contains(topic.topic_name):
            result = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        count = len(broker.replica_manager.metadata_cache.partitions(topic.topic_name))
        indexes = {key.partition for key in keys if key.topic_id == topic_id} | set(range(count))
        for index in sorted(indexes):
            key = ShareKey(body.group_id, topic_id, index)
            outcome = await share.persister.delete(key)
            share.partitions.entries.drop(key)
            if outcome != ErrorCode.NONE and result == ErrorCode.NONE:
                result = outcome
        if group is not None:
            group.assigned_ever = {item for item in group.assigned_ever if item[0] != topic_id}
        responses.append({"topic_name": topic.topic_name, "topic_id": topic_id, "error_code": result,
                          "error_message": None})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": responses}

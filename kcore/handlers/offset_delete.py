"""OffsetDelete (key 47, KIP-496): delete some committed offsets of a group.

An Empty group may lose any of its offsets; a consumer group with members
only those of topics it does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC
otherwise); any other non-empty group gets NON_EMPTY_GROUP. Partitions that
do not exist get UNKNOWN_TOPIC_OR_PARTITION. With a group-level error the
response lists no partitions, as in Kafka.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    errors: dict[tuple[str, int], int] = {}
    partitions: list[tuple[str, int]] = []
    if not group_allowed(broker, context, AclOperation.DELETE, body.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0,
                "topics": []}
    readable = allowed_topics(broker, context, AclOperation.READ, [t.name for t in body.topics])
    for topic in body.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if topic.name not in readable:
                errors[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif broker.replica_manager.metadata_cache.partition(*key) is None:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                partitions.append(key)
    error, deleted = broker.group_coordinator.delete_offsets(body.group_id, partitions)
    if error:
        return {"error_code": error, "throttle_time_ms": 0, "topics": []}
    errors.update(deleted)
    return {
        "error_code": ErrorCode.NONE,
        "throttle_time_ms": 0,
        "topics": [{"name": topic.name,
                    "partitions": [{"partition_index": p.partition_index,
                                    "error_code": errors.get((topic.name, p.partition_index),
                                                             ErrorCode.NONE)}
                                   for p in topic.partitions]}
                   for topic in body.topics],
    }

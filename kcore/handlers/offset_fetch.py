"""OffsetFetch (key 9): a group's committed offsets with their metadata.

A partition without a commit answers offset -1, metadata "" and no error.
v2+ may send null topics to ask for every partition the group committed,
and carries a top-level error code; v1 reports errors per partition. v5
returns each commit's leader epoch. v7's require_stable answers
UNSTABLE_OFFSET_COMMIT (retriable) for a partition whose transactional
offset commit still waits for its marker, as Kafka's coordinator does.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_TOP_LEVEL_ERROR_VERSION = 2
REQUIRE_STABLE_VERSION = 7


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    if not group_allowed(broker, context, AclOperation.DESCRIBE, body.group_id):
        return _group_refused(body, version)
    if body.topics is None:
        partitions = None
    else:
        partitions = [(topic.name, index) for topic in body.topics for index in topic.partition_indexes]
    error, rows = broker.group_coordinator.fetch_offsets(body.group_id, partitions)
    refused: set[str] = set()
    if broker.authorizer is not None:
        rows, refused = _describable_rows(broker, context, rows, all_topics=partitions is None)
    partition_error = error if version < FIRST_TOP_LEVEL_ERROR_VERSION else ErrorCode.NONE
    if error and partitions is not None:
        rows = [(topic, index, None) for topic, index in partitions]
    unstable = (broker.group_coordinator.unstable_partitions(body.group_id)
                if version >= REQUIRE_STABLE_VERSION and body.require_stable and not error else set())
    topics: dict[str, list[dict]] = {}
    for topic, index, value in rows:
        code: int
        if (topic, index) in unstable and topic not in refused:
            value, code = None, ErrorCode.UNSTABLE_OFFSET_COMMIT
        else:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if topic in refused else partition_error
        topics.setdefault(topic, []).append({
            "partition_index": index,
            "committed_offset": value.offset if value is not None else -1,
            "committed_leader_epoch": value.leader_epoch if value is not None else -1,
            "metadata": value.metadata if value is not None else "",
            "error_code": code,
        })
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": name, "partitions": items} for name, items in topics.items()],
        "error_code": error,
    }


def _group_refused(body, version: int) -> dict:
    code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if version >= FIRST_TOP_LEVEL_ERROR_VERSION:
        return {"throttle_time_ms": 0, "topics": [], "error_code": code}
    return {"throttle_time_ms": 0, "error_code": code, "topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
             "metadata": "", "error_code": code} for index in topic.partition_indexes]}
        for topic in body.topics or []]}


def _describable_rows(broker, context, rows, all_topics: bool) -> tuple[list, set[str]]:
    """Offsets of topics the principal may DESCRIBE and the named topics
    it may not (TOPIC_AUTHORIZATION_FAILED); those of an all-topics answer
    are left out (Kafka's KafkaApis)."""
    topics = {row[0] for row in rows}
    allowed = allowed_topics(broker, context, AclOperation.DESCRIBE, topics)
    kept = [(topic, index, value if topic in allowed else None) for topic, index, value in rows
            if topic in allowed or not all_topics]
    return kept, topics - allowed

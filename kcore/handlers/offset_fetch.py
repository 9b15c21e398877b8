"""OffsetFetch (key 9): a group's committed offsets with their metadata.

A partition without a commit answers offset -1, metadata "" and no error.
v2+ may send null topics to ask for every partition the group committed,
and carries a top-level error code; v1 reports errors per partition. v5
returns each commit's leader epoch. v7's require_stable answers
UNSTABLE_OFFSET_COMMIT (retriable) for a partition whose transactional
offset commit still waits for its marker, as Kafka's coordinator does. v8
asks for several groups at once, each answered on its own; v9 adds the
member id and epoch of a consumer-protocol member, which the coordinator
checks (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH).
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_TOP_LEVEL_ERROR_VERSION = 2
REQUIRE_STABLE_VERSION = 7
FIRST_GROUPS_VERSION = 8
FIRST_MEMBER_EPOCH_VERSION = 9


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    if version >= FIRST_GROUPS_VERSION:
        groups = []
        for group in body.groups:
            member = ((group.member_id, group.member_epoch) if version >= FIRST_MEMBER_EPOCH_VERSION
                      else (None, -1))
            error, topics = _fetch_group(broker, context, group.group_id, group.topics, version,
                                         body.require_stable, member)
            groups.append({"group_id": group.group_id, "topics": topics, "error_code": error})
        return {"throttle_time_ms": 0, "groups": groups}
    require_stable = version >= REQUIRE_STABLE_VERSION and body.require_stable
    error, topics = _fetch_group(broker, context, body.group_id, body.topics, version, require_stable,
                                 (None, -1))
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error}


def _fetch_group(broker: BrokerFacade, context, group_id: str, requested, version: int,
                 require_stable: bool, member: tuple[str | None, int]) -> tuple[int, list[dict]]:
    """(top-level error, topics) of one group in the version's layout."""
    if not group_allowed(broker, context, AclOperation.DESCRIBE, group_id):
        return _group_refused(requested, version)
    partitions = None if requested is None else [
        (topic.name, index) for topic in requested for index in topic.partition_indexes]
    coordinator = broker.group_coordinator
    error, rows = coordinator.fetch_offsets(group_id, partitions, *member)
    unstable = coordinator.unstable_partitions(group_id) if require_stable and not error else set()
    refused: set[str] = set()
    if broker.authorizer is not None:
        rows, refused = _describable_rows(broker, context, rows, all_topics=partitions is None)
    partition_error = error if version < FIRST_TOP_LEVEL_ERROR_VERSION else ErrorCode.NONE
    if error and partitions is not None:
        rows = [(topic, index, None) for topic, index in partitions]
    if error and version >= FIRST_GROUPS_VERSION:
        rows = []
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
    return error, [{"name": name, "partitions": items} for name, items in topics.items()]


def _group_refused(requested, version: int) -> tuple[int, list[dict]]:
    code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if version >= FIRST_TOP_LEVEL_ERROR_VERSION:
        return code, []
    return code, [
        {"name": topic.name, "partitions": [
            {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
             "metadata": "", "error_code": code} for index in topic.partition_indexes]}
        for topic in requested or []]


def _describable_rows(broker, context, rows, all_topics: bool) -> tuple[list, set[str]]:
    """Offsets of topics the principal may DESCRIBE and the named topics
    it may not (TOPIC_AUTHORIZATION_FAILED); those of an all-topics answer
    are left out (Kafka's KafkaApis)."""
    topics = {row[0] for row in rows}
    allowed = allowed_topics(broker, context, AclOperation.DESCRIBE, topics)
    kept = [(topic, index, value if topic in allowed else None) for topic, index, value in rows
            if topic in allowed or not all_topics]
    return kept, topics - allowed

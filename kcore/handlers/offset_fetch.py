"""OffsetFetch (key 9): a group's committed offsets with their metadata.

A partition without a commit answers offset -1, metadata "" and no error.
v2+ may send null topics to ask for every partition the group committed,
and carries a top-level error code; v1 reports errors per partition. v5
returns each commit's leader epoch. v7's require_stable (librdkafka sets it
for read_committed consumers) answers UNSTABLE_OFFSET_COMMIT, offset -1,
for a partition with a transactional commit that no marker ended yet: the
consumer retries rather than start from an offset about to change. v8+
ask for several groups at once; each group is answered on its own, with
its own error (GROUP_AUTHORIZATION_FAILED, NOT_COORDINATOR, ...) and then
no topics. v9's member_id and member_epoch concern groups of the consumer
group protocol (KIP-848); a classic group answers as v8.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_TOP_LEVEL_ERROR_VERSION = 2
REQUIRE_STABLE_VERSION = 7
GROUPS_VERSION = 8


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    require_stable = version >= REQUIRE_STABLE_VERSION and body.require_stable
    if version >= GROUPS_VERSION:
        groups = []
        for group in body.groups:
            error, topics = _group_offsets(broker, context, group.group_id, group.topics,
                                           require_stable)
            groups.append({"group_id": group.group_id, "topics": [] if error else topics,
                           "error_code": error})
        return {"throttle_time_ms": 0, "groups": groups}
    error, topics = _group_offsets(broker, context, body.group_id, body.topics, require_stable)
    if version >= FIRST_TOP_LEVEL_ERROR_VERSION:
        return {"throttle_time_ms": 0, "topics": [] if error else topics, "error_code": error}
    if error:  # v1: the group's error on every partition asked for
        topics = [{"name": topic.name, "partitions": [_partition(index, None, error)
                                                      for index in topic.partition_indexes]}
                  for topic in body.topics or []]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error}


def _group_offsets(broker: BrokerFacade, context, group_id: str, wanted,
                   require_stable: bool) -> tuple[int, list[dict]]:
    """(the group's error, its topics with their offsets) for the topics
    ``wanted`` (None: every partition the group committed)."""
    if not group_allowed(broker, context, AclOperation.DESCRIBE, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if wanted is None:
        partitions = None
    else:
        partitions = [(topic.name, index) for topic in wanted for index in topic.partition_indexes]
    coordinator = broker.group_coordinator
    error, rows = coordinator.fetch_offsets(group_id, partitions)
    if error:
        return error, []
    refused: set[str] = set()
    if broker.authorizer is not None:
        rows, refused = _describable_rows(broker, context, rows, all_topics=partitions is None)
    unstable = coordinator.unstable_partitions(group_id) if require_stable else set()
    topics: dict[str, list[dict]] = {}
    for topic, index, value in rows:
        if topic in refused:
            item = _partition(index, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif (topic, index) in unstable:
            item = _partition(index, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        else:
            item = _partition(index, value, ErrorCode.NONE)
        topics.setdefault(topic, []).append(item)
    return ErrorCode.NONE, [{"name": name, "partitions": items} for name, items in topics.items()]


def _partition(index: int, value, error: int) -> dict:
    return {"partition_index": index,
            "committed_offset": value.offset if value is not None else -1,
            "committed_leader_epoch": value.leader_epoch if value is not None else -1,
            "metadata": value.metadata if value is not None else "",
            "error_code": error}


def _describable_rows(broker, context, rows, all_topics: bool) -> tuple[list, set[str]]:
    """Offsets of topics the principal may DESCRIBE and the named topics
    it may not (TOPIC_AUTHORIZATION_FAILED); those of an all-topics answer
    are left out (Kafka's KafkaApis)."""
    topics = {row[0] for row in rows}
    allowed = allowed_topics(broker, context, AclOperation.DESCRIBE, topics)
    kept = [(topic, index, value if topic in allowed else None) for topic, index, value in rows
            if topic in allowed or not all_topics]
    return kept, topics - allowed

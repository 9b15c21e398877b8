"""OffsetFetch (key 9): a group's committed offsets with their metadata.

A partition without a commit answers offset -1, metadata "" and no error.
v2+ may send null topics to ask for every partition the group committed,
and carries a top-level error code; v1 reports errors per partition. v5
returns each commit's leader epoch.
"""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode

FIRST_TOP_LEVEL_ERROR_VERSION = 2


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    if body.topics is None:
        partitions = None
    else:
        partitions = [(topic.name, index) for topic in body.topics for index in topic.partition_indexes]
    error, rows = broker.group_coordinator.fetch_offsets(body.group_id, partitions)
    partition_error = error if version < FIRST_TOP_LEVEL_ERROR_VERSION else ErrorCode.NONE
    if error and partitions is not None:
        rows = [(topic, index, None) for topic, index in partitions]
    topics: dict[str, list[dict]] = {}
    for topic, index, value in rows:
        topics.setdefault(topic, []).append({
            "partition_index": index,
            "committed_offset": value.offset if value is not None else -1,
            "committed_leader_epoch": value.leader_epoch if value is not None else -1,
            "metadata": value.metadata if value is not None else "",
            "error_code": partition_error,
        })
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": name, "partitions": items} for name, items in topics.items()],
        "error_code": error,
    }

"""ListOffsets (key 2): earliest (-2), latest (-1) or by timestamp.

Latest is the high watermark, or the last stable offset for
read_committed (v2+), as in Kafka: a consumer never sees past either."""
from __future__ import annotations

from kcore.protocol.errors import ErrorCode

LATEST = -1
READ_COMMITTED = 1


async def handle(broker, context, request):
    body = request.body
    read_committed = request.api_version >= 2 and body.isolation_level == READ_COMMITTED
    topics = []
    for topic in body.topics:
        results = []
        for item in topic.partitions:
            results.append(_lookup(broker, topic.name, item, read_committed))
        topics.append({"name": topic.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(broker, topic: str, item, read_committed: bool) -> dict:
    partition = broker.replica_manager.get(topic, item.partition_index)
    result = {"partition_index": item.partition_index, "error_code": ErrorCode.NONE,
              "timestamp": -1, "offset": -1, "leader_epoch": -1}
    if partition is None:
        result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return result
    result["error_code"] = partition.check_leader_epoch(item.current_leader_epoch)
    if result["error_code"] != ErrorCode.NONE:
        return result
    if item.timestamp == LATEST and read_committed:
        result["offset"] = partition.last_stable_offset
    else:
        result["timestamp"], result["offset"] = partition.offset_for_timestamp(item.timestamp)
    result["leader_epoch"] = partition.leader_epoch
    return result

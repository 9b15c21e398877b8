"""ListOffsets (key 2): earliest (-2), latest (-1) or by timestamp.

Latest is the high watermark, or the last stable offset for
read_committed (v2+), as in Kafka: a consumer never sees past either, and
a timestamp lookup answers no offset at or past it. Only
the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere); a leader elected so
recently that its high watermark is still below what it held when elected
answers OFFSET_NOT_AVAILABLE (KIP-207), so a consumer never sees the
latest offset go backwards across a leader change."""
from __future__ import annotations

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.constants import READ_COMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    read_committed = request.api_version >= 2 and body.isolation_level == READ_COMMITTED
    topics = []
    for topic in body.topics:
        if not topic_allowed(broker, context, AclOperation.DESCRIBE, topic.name):
            results = [{"partition_index": item.partition_index,
                        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "timestamp": -1,
                        "offset": -1, "leader_epoch": -1} for item in topic.partitions]
            topics.append({"name": topic.name, "partitions": results})
            continue
        results = []
        for item in topic.partitions:
            results.append(_lookup(broker, topic.name, item, read_committed))
        topics.append({"name": topic.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(broker, topic: str, item, read_committed: bool) -> dict:
    result = {"partition_index": item.partition_index, "error_code": ErrorCode.NONE,
              "timestamp": -1, "offset": -1, "leader_epoch": -1}
    partition = broker.replica_manager.get(topic, item.partition_index)
    result["error_code"] = leader_error(broker, topic, item.partition_index, partition,
                                        item.current_leader_epoch)
    if result["error_code"] != ErrorCode.NONE:
        return result
    if partition.high_watermark_behind_epoch_start:
        result["error_code"] = ErrorCode.OFFSET_NOT_AVAILABLE
        return result
    result["timestamp"], result["offset"] = partition.offset_for_timestamp(item.timestamp, read_committed)
    result["leader_epoch"] = partition.leader_epoch
    return result


def leader_error(broker, topic: str, index: int, partition, current_leader_epoch: int) -> int:
    """What a request for the leader of ``topic``-``index`` gets here:
    NONE when this broker leads it at the epoch the client knows."""
    if partition is None:
        return broker.replica_manager.partition_error(topic, index)
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return partition.check_leader_epoch(current_leader_epoch)

"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch.

Followers call it before fetching from a new leader (with replica_id, v3+)
and truncate to the answer; clients call it after a leader change to detect
log truncation. The answer for epoch E comes from the leader's epoch cache:
the start offset of the first epoch after E, or the log end offset when E
is the current epoch; an epoch the leader never had gets the largest epoch
below it and that epoch's end. Only the leader answers."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.handlers.list_offsets import leader_error
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    topics = []
    for topic in request.body.topics:
        results = []
        for item in topic.partitions:
            results.append(_end_offset(broker, topic.topic, item))
        topics.append({"topic": topic.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _end_offset(broker, topic: str, item) -> dict:
    result = {"error_code": ErrorCode.NONE, "partition": item.partition,
              "leader_epoch": -1, "end_offset": -1}
    partition = broker.replica_manager.get(topic, item.partition)
    result["error_code"] = leader_error(broker, topic, item.partition, partition,
                                        item.current_leader_epoch)
    if result["error_code"] != ErrorCode.NONE:
        return result
    epoch, end_offset = partition.end_offset_for_epoch(item.leader_epoch)
    result["leader_epoch"], result["end_offset"] = epoch, end_offset
    return result

"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch.

Followers call it before fetching from a new leader (with replica_id, v3+)
and truncate to the answer; clients call it after a leader change to detect
log truncation. The answer for epoch E comes from the leader's epoch cache:
the start offset of the first epoch after E, or the log end offset when E
is the current epoch; an epoch the leader never had gets the largest epoch
below it and that epoch's end. Only the leader answers."""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster, topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.list_offsets import leader_error
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    topics = []
    body = request.body
    follower = body.replica_id >= 0
    cluster_ok = not follower or allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION)
    for topic in body.topics:
        # A follower needs CLUSTER_ACTION on the cluster, a client DESCRIBE on the topic.
        if not cluster_ok or not (follower or topic_allowed(broker, context, AclOperation.DESCRIBE,
                                                            topic.topic)):
            code = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if not cluster_ok
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            topics.append({"topic": topic.topic, "partitions": [
                {"error_code": code, "partition": item.partition, "leader_epoch": -1,
                 "end_offset": -1} for item in topic.partitions]})
            continue
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

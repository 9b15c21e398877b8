"""DescribeLogDirs (key 35, KIP-113): each of this broker's log dirs with
the replicas it holds, their size in bytes and offset lag, and whether a
replica is the future copy of a move (AlterReplicaLogDirs); from v4 the
total and usable bytes of each dir's volume.

As Kafka's ReplicaManager.describeLogDirs answers: every configured dir
(absolute path), an offline one with KAFKA_STORAGE_ERROR and nothing else;
only the partitions asked for (null: every partition this broker has a log
of), topics without any left out. DESCRIBE on the cluster is required:
without it the answer is CLUSTER_AUTHORIZATION_FAILED (top-level, v3+) and
no dir at all.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

TopicPartition = tuple[str, int]


async def handle(broker: BrokerFacade, context, request):
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results": []}
    topics = request.body.topics
    wanted = None if topics is None else {(t.topic, p) for t in topics for p in t.partitions}
    log_manager = broker.replica_manager.log_manager
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "results": [_describe_dir(broker, directory, wanted)
                        for directory in log_manager.log_dirs]}


def _describe_dir(broker: BrokerFacade, directory, wanted: set[TopicPartition] | None) -> dict:
    replica_manager = broker.replica_manager
    dirs = replica_manager.log_manager.dirs
    offline = {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(directory),
               "topics": [], "total_bytes": -1, "usable_bytes": -1, "is_cordoned": False}
    if not dirs.is_online(directory):
        return offline
    try:
        total_bytes, usable_bytes = dirs.usage(directory)
    except OSError as exc:
        dirs.report(directory, f"cannot read its volume's size: {exc.strerror}")
        return offline
    by_topic: dict[str, list[dict]] = {}
    for log, is_future in replica_manager.log_manager.logs_in(directory):
        if wanted is not None and (log.topic, log.partition) not in wanted:
            continue
        by_topic.setdefault(log.topic, []).append({
            "partition_index": log.partition,
            "partition_size": log.size_in_bytes,
            "offset_lag": replica_manager.offset_lag(log.topic, log.partition,
                                                     log.log_end_offset, is_future),
            "is_future_key": is_future})
    return {"error_code": ErrorCode.NONE, "log_dir": str(directory),
            "topics": [{"name": name, "partitions": sorted(partitions,
                                                           key=lambda p: p["partition_index"])}
                       for name, partitions in sorted(by_topic.items())],
            "total_bytes": total_bytes, "usable_bytes": usable_bytes, "is_cordoned": False}

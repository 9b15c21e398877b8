"""AlterReplicaLogDirs (key 34, KIP-113): move replicas of this broker to
another of its log dirs while they serve (ReplicaManager, log_dir_mover.py).

Per partition, as Kafka's ReplicaManager.alterReplicaLogDirs answers:
LOG_DIR_NOT_FOUND for a path that is not one of ``log.dirs`` (absolute),
KAFKA_STORAGE_ERROR for an offline dir or partition, REPLICA_NOT_AVAILABLE
for a partition of the cluster this broker holds no replica of yet (it will
be created in that dir), UNKNOWN_TOPIC_OR_PARTITION for one that does not
exist, INVALID_TOPIC_EXCEPTION for a name too long for a future log's
directory. A partition named under two paths goes to the last one. ALTER on
the cluster is required: without it every partition gets
CLUSTER_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    moves: dict[tuple[str, int], str] = {}
    for directory in request.body.dirs:
        for topic in directory.topics:
            for index in topic.partitions:
                moves[(topic.name, index)] = directory.path
    if allowed_on_cluster(broker, context, AclOperation.ALTER):
        errors = broker.replica_manager.alter_replica_log_dirs(moves)
    else:
        errors = dict.fromkeys(moves, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": topic, "partitions": partitions}
                        for topic, partitions in by_topic.items()]}

"""AlterPartitionReassignments (key 45, KIP-455): move partitions to other
replicas, or cancel a move (null replicas). Needs ALTER on the cluster, as
Kafka; any broker takes it and passes it to the controller.

Per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
(empty, repeated, negative or not-alive brokers), NO_REASSIGNMENT_IN_PROGRESS
(a cancel with nothing to cancel), INVALID_REPLICATION_FACTOR (v1 with
allow_replication_factor_change false, and a target of another length,
KIP-860). The answer comes once each move has started;
ListPartitionReassignments shows it until it completes."""
from __future__ import annotations

import asyncio

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


def _refused(code: int, message: str | None = None, allow: bool = True) -> dict:
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow, "error_code": code,
            "error_message": message, "responses": []}


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    allow = body.allow_replication_factor_change  # True below v1
    if not allowed_on_cluster(broker, context, AclOperation.ALTER):
        return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, allow)
    items = [((topic.name, p.partition_index), None if p.replicas is None else list(p.replicas))
             for topic in body.topics for p in topic.partitions]
    try:
        async with asyncio.timeout(max(body.timeout_ms, 0) / 1000 or None):
            results = await broker.controller.alter_partition_reassignments(items, allow)
    except TimeoutError:
        return _refused(ErrorCode.REQUEST_TIMED_OUT, None, allow)
    except Exception as exc:  # no controller reachable
        return _refused(getattr(exc, "error_code", ErrorCode.NOT_CONTROLLER), str(exc) or None,
                        allow)
    topics: dict[str, list[dict]] = {}
    for (topic, index), _ in items:
        code, message = results.get((topic, index), (ErrorCode.UNKNOWN_SERVER_ERROR, None))
        topics.setdefault(topic, []).append({"partition_index": index, "error_code": code,
                                             "error_message": message})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow,
            "error_code": ErrorCode.NONE, "error_message": None,
            "responses": [{"name": t, "partitions": p} for t, p in topics.items()]}

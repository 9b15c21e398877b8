"""ListPartitionReassignments (key 46, KIP-455): the moves in progress, each
partition's full replica set with the replicas being added and removed.
Needs DESCRIBE on the cluster, as Kafka; any broker passes it to the
controller. A null topic list means every partition; named partitions not
being moved are left out."""
from __future__ import annotations

import asyncio

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


def _refused(code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "topics": []}


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE):
        return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    partitions = None
    if body.topics is not None:
        partitions = [(t.name, index) for t in body.topics for index in t.partition_indexes]
    try:
        async with asyncio.timeout(max(body.timeout_ms, 0) / 1000 or None):
            found = await broker.controller.list_partition_reassignments(partitions)
    except TimeoutError:
        return _refused(ErrorCode.REQUEST_TIMED_OUT)
    except Exception as exc:  # no controller reachable
        return _refused(getattr(exc, "error_code", ErrorCode.NOT_CONTROLLER), str(exc) or None)
    topics: dict[str, list[dict]] = {}
    for (topic, index), assignment in sorted(found.items()):
        topics.setdefault(topic, []).append({
            "partition_index": index, "replicas": list(assignment.replicas),
            "adding_replicas": list(assignment.adding),
            "removing_replicas": list(assignment.removing)})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}

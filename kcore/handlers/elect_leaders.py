"""ElectLeaders (key 43, KIP-460): elect the preferred replica (type 0, the
only kind before v1) or, unclean (type 1), any live replica of partitions
without a live leader. Any broker takes it and passes it to the controller.
Per partition: ELECTION_NOT_NEEDED when the wanted leader leads already,
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when no
replica qualifies, UNKNOWN_TOPIC_OR_PARTITION for a partition that does
not exist. A null partition list means every partition."""
from __future__ import annotations

import asyncio

from kcore.controller.base import PREFERRED_ELECTION
from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    election_type = body.election_type if request.api_version >= 1 else PREFERRED_ELECTION
    if not allowed_on_cluster(broker, context, AclOperation.ALTER):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "replica_election_results": []}
    partitions = None
    if body.topic_partitions is not None:
        partitions = [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
    try:
        async with asyncio.timeout(max(body.timeout_ms, 0) / 1000 or None):
            results = await broker.controller.elect_leaders(election_type, partitions)
    except TimeoutError:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.REQUEST_TIMED_OUT,
                "replica_election_results": []}
    except Exception:  # no controller reachable
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER,
                "replica_election_results": []}
    topics: dict[str, list[dict]] = {}
    for (topic, index), (code, message) in sorted(results.items()):
        topics.setdefault(topic, []).append({"partition_id": index, "error_code": code,
                                             "error_message": message})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "replica_election_results": [{"topic": t, "partition_result": p}
                                         for t, p in topics.items()]}

"""DescribeCluster (key 60): the live brokers, the cluster id and the
controller, from this broker's metadata cache; with
include_cluster_authorized_operations, what the principal may do on the
cluster (KIP-430)."""
from __future__ import annotations

from kcore.handlers.authz import AUTHORIZED_OPERATIONS_OMITTED, cluster_authorized_operations
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode

BROKER_ENDPOINT = 1


async def handle(broker: BrokerFacade, context, request):
    cache = broker.replica_manager.metadata_cache
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": broker.controller.cluster_id,
        "controller_id": cache.controller_id,
        "brokers": [{"broker_id": b.broker_id, "host": host, "port": port, "rack": b.rack}
                    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id)
                    for host, port in [b.endpoint(context.listener)]],
        "cluster_authorized_operations": (
            cluster_authorized_operations(broker, context)
            if request.body.include_cluster_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED),
    }

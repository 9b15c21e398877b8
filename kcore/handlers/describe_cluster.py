"""DescribeCluster (key 60): this broker, the cluster id and controller."""
from __future__ import annotations

from kcore.protocol.errors import ErrorCode

BROKER_ENDPOINT = 1


async def handle(broker, context, request):
    host, port = broker.config.advertised_address()
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": broker.controller.cluster_id,
        "controller_id": broker.controller.controller_id,
        "brokers": [{"broker_id": broker.config.broker_id, "host": host, "port": port,
                     "rack": None}],
        "cluster_authorized_operations": -2147483648,
    }

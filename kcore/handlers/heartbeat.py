"""Heartbeat (key 12): keep a member's session alive; REBALANCE_IN_PROGRESS
tells it to rejoin. v3 carries group_instance_id (KIP-345)."""
from __future__ import annotations

from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_STATIC_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = broker.group_coordinator.heartbeat(
        body.group_id, body.member_id,
        body.group_instance_id if request.api_version >= FIRST_STATIC_VERSION else None,
        body.generation_id)
    return {"throttle_time_ms": 0, "error_code": error}

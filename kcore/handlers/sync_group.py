"""SyncGroup (key 14): the leader hands in the assignment; every member
gets its own share. Followers (and the leader) wait until the leader's
assignment is in `__consumer_offsets`; a Stable group answers at once.
v3 carries group_instance_id (KIP-345)."""
from __future__ import annotations

from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_STATIC_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "assignment": b""}
    result = await broker.group_coordinator.sync_group(
        body.group_id, body.generation_id, body.member_id,
        body.group_instance_id if request.api_version >= FIRST_STATIC_VERSION else None,
        {item.member_id: bytes(item.assignment) for item in body.assignments})
    return {"throttle_time_ms": 0, "error_code": result.error_code, "assignment": result.assignment}

"""LeaveGroup (key 13): members leave and the group rebalances.

v0-2 name one member and answer with one error code (the member's error
when the request as a whole succeeded, as Kafka does); v3 (KIP-345) names
several members by member id and/or group instance id and answers per
member.
"""
from __future__ import annotations

from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_BATCH_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "members": []}
    if request.api_version >= FIRST_BATCH_VERSION:
        members = [(member.member_id, member.group_instance_id) for member in body.members]
    else:
        members = [(body.member_id, None)]
    error, member_errors = broker.group_coordinator.leave_group(body.group_id, members)
    if request.api_version < FIRST_BATCH_VERSION:
        if error == ErrorCode.NONE and member_errors:
            error = member_errors[0]
        return {"throttle_time_ms": 0, "error_code": error, "members": []}
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "members": [{"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
                    for (member_id, instance_id), code in zip(members, member_errors)],
    }

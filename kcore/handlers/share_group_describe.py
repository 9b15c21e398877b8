"""ShareGroupDescribe (key 77): members, epochs and assignments of share
groups this broker coordinates; GROUP_ID_NOT_FOUND for a group that is not
a share group (or none), NOT_COORDINATOR for another broker's."""
from __future__ import annotations

from kcore.handlers.authz import AUTHORIZED_OPERATIONS_OMITTED, authorized_operations, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation, ResourceType


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    groups = []
    for group_id in body.group_ids:
        if not group_allowed(broker, context, AclOperation.DESCRIBE, group_id):
            groups.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                           "group_id": group_id, "group_state": "", "group_epoch": -1,
                           "assignment_epoch": -1, "assignor_name": "", "members": [],
                           "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        described = broker.share_groups.coordinator.describe(group_id)
        if body.include_authorized_operations and described["error_code"] == ErrorCode.NONE:
            described["authorized_operations"] = authorized_operations(
                broker, context, ResourceType.GROUP, group_id)
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}

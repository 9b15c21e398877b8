"""DescribeGroups (key 15): state, protocol and members of groups.

An unknown group is described as Dead with no error before v6; from v6 it
gets GROUP_ID_NOT_FOUND with a message, and so do a consumer-protocol
group and a share group, which only ConsumerGroupDescribe and
ShareGroupDescribe describe (Kafka 4). Only
a Stable group reports its protocol and each member's metadata and
assignment; other states list the members without them. v4 adds each
member's group_instance_id. v3+ with include_authorized_operations adds
what the principal may do on each group it may describe (KIP-430).
"""
from __future__ import annotations

from dataclasses import replace

from kcore.coordinator.group.offsets import DEAD_GROUP
from kcore.handlers.authz import AUTHORIZED_OPERATIONS_OMITTED, authorized_operations, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation, ResourceType

FIRST_NOT_FOUND_VERSION = 6


async def handle(broker: BrokerFacade, context, request):
    include_operations = request.api_version >= 3 and request.body.include_authorized_operations
    described = []
    for group_id in request.body.groups:
        if not group_allowed(broker, context, AclOperation.DESCRIBE, group_id):
            described.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                              "group_id": group_id, "group_state": "", "protocol_type": "",
                              "protocol_data": "", "members": [],
                              "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        error, summary = broker.group_coordinator.describe_group(group_id)
        if not error and summary.state == DEAD_GROUP.state and broker.share_groups.coordinator.is_share_group(
                group_id):
            summary = replace(DEAD_GROUP, message=f"Group {group_id} is not a classic group.")
        if (not error and summary.state == DEAD_GROUP.state
                and request.api_version >= FIRST_NOT_FOUND_VERSION):
            described.append({"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "group_id": group_id,
                              "error_message": summary.message or f"Group {group_id} not found.",
                              "group_state": "", "protocol_type": "", "protocol_data": "",
                              "members": [], "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        described.append({
            "error_code": error,
            "group_id": group_id,
            "group_state": summary.state,
            "protocol_type": summary.protocol_type,
            "protocol_data": summary.protocol,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in summary.members],
            "authorized_operations": (
                authorized_operations(broker, context, ResourceType.GROUP, group_id)
                if include_operations and error == ErrorCode.NONE else AUTHORIZED_OPERATIONS_OMITTED),
        })
    return {"throttle_time_ms": 0, "groups": described}

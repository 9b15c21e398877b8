"""ConsumerGroupDescribe (key 69): consumer-protocol groups (KIP-848) with
their epochs, assignor and members' current and target assignments.

A classic group or an unknown one answers GROUP_ID_NOT_FOUND; DESCRIBE on
the group is needed (GROUP_AUTHORIZATION_FAILED); v1 adds each member's
type (0 classic protocol, 1 consumer protocol). With
include_authorized_operations, what the principal may do on the group.
"""
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
            groups.append(_empty(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        described = broker.group_coordinator.consumer_group_describe(group_id)
        if described.error_code:
            groups.append(_empty(group_id, described.error_code, described.error_message))
            continue
        groups.append({
            "error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
            "group_state": described.group_state, "group_epoch": described.group_epoch,
            "assignment_epoch": described.assignment_epoch, "assignor_name": described.assignor_name,
            "members": [{
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": m.subscribed_topic_names,
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": _assignment(m.assignment),
                "target_assignment": _assignment(m.target_assignment),
                "member_type": m.member_type,
            } for m in described.members],
            "authorized_operations": (
                authorized_operations(broker, context, ResourceType.GROUP, group_id)
                if body.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED),
        })
    return {"throttle_time_ms": 0, "groups": groups}


def _assignment(items) -> dict:
    return {"topic_partitions": [{"topic_id": topic_id, "topic_name": name, "partitions": partitions}
                                 for topic_id, name, partitions in items]}


def _empty(group_id: str, code: int, message: str | None) -> dict:
    return {"error_code": code, "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

"""ShareGroupHeartbeat (key 76): join, stay in and leave a share group
(KIP-932); the membership rules are in coordinator/share/coordinator.py.
Needs READ on the group and DESCRIBE on the subscribed topics."""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, client_host, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = body.subscribed_topic_names or []
    if broker.authorizer is not None and set(topics) - allowed_topics(
            broker, context, AclOperation.DESCRIBE, topics):
        return _refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return broker.share_groups.coordinator.heartbeat(body, request.header.client_id or "",
                                                      client_host(context))


def _refused(code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}

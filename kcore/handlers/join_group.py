"""JoinGroup (key 11): join a group and wait for the rebalance's join phase.

v0 has no rebalance timeout: the session timeout serves as both, as in
Kafka. From v4 a member without an id first gets MEMBER_ID_REQUIRED with
its id (KIP-394); from v5 group_instance_id makes a static member (KIP-345).
The response is sent when the coordinator completes the join phase.
"""
from __future__ import annotations

from kcore.coordinator.group import JoinRequest
from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_VERSION_REQUIRING_MEMBER_ID = 4
FIRST_STATIC_VERSION = 5


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "generation_id": -1, "protocol_name": "", "leader": "",
                "member_id": body.member_id, "members": []}
    await broker.group_coordinator.manager.maybe_create_topic()
    version = request.api_version
    result = await broker.group_coordinator.join_group(JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id if version >= FIRST_STATIC_VERSION else None,
        require_known_member_id=version >= FIRST_VERSION_REQUIRING_MEMBER_ID,
        client_id=request.header.client_id or "",
        client_host=client_host(context),
        rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
        session_timeout_ms=body.session_timeout_ms,
        protocol_type=body.protocol_type,
        protocols=[(protocol.name, bytes(protocol.metadata)) for protocol in body.protocols]))
    return {
        "throttle_time_ms": 0,
        "error_code": result.error_code,
        "generation_id": result.generation_id,
        "protocol_name": result.protocol_name or "",
        "leader": result.leader_id,
        "member_id": result.member_id,
        "members": [{"member_id": member_id, "group_instance_id": instance_id, "metadata": metadata}
                    for member_id, instance_id, metadata in result.members],
    }


def client_host(context) -> str:
    """Kafka's clientHost: the peer address as InetAddress.toString prints it."""
    peer = getattr(context, "peer", None)
    if isinstance(peer, tuple) and peer:
        return f"/{peer[0]}"
    return ""

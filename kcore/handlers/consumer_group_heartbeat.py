"""ConsumerGroupHeartbeat (key 68): the consumer group protocol of KIP-848.

The member joins (epoch 0), heartbeats (its epoch, and only what changed)
and leaves (-1, or -2 for a static member that will come back); the
coordinator answers with the member's epoch, the heartbeat interval and,
when it changed or the member asked in full, its assignment by topic id.
v1 requires the member id from the client and may carry a regex
subscription. Needs READ on the group (GROUP_AUTHORIZATION_FAILED), and
DESCRIBE on subscribed topics is not checked here (Kafka filters a regex's
topics by ACLs; kcore resolves them unfiltered).
"""
from __future__ import annotations

from kcore.coordinator.group.consumer_coordinator import HeartbeatRequest
from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.join_group import client_host
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    await broker.group_coordinator.manager.maybe_create_topic()
    owned = None
    if body.topic_partitions is not None:
        owned = [(item.topic_id, list(item.partitions)) for item in body.topic_partitions]
    result = await broker.group_coordinator.consumer_group_heartbeat(HeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=(list(body.subscribed_topic_names)
                                if body.subscribed_topic_names is not None else None),
        subscribed_topic_regex=body.subscribed_topic_regex if request.api_version >= 1 else None,
        server_assignor=body.server_assignor, owned=owned,
        client_id=request.header.client_id or "", client_host=client_host(context),
        api_version=request.api_version))
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": topic_id, "partitions": sorted(partitions)}
            for topic_id, partitions in sorted(result.assignment.items(), key=lambda item: str(item[0]))]}
    return {"throttle_time_ms": 0, "error_code": result.error_code, "error_message": result.error_message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}


def _error(code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}

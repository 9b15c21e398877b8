"""FindCoordinator (key 10): the broker coordinating a group or transaction.

A group's coordinator is the leader of its `__consumer_offsets` partition
(abs(hashCode(group id)) % partitions), from the metadata cache. A group
lookup (key_type 0, the only kind before v1) creates `__consumer_offsets`
when it does not exist yet, as Kafka does, so the first commit does not pay
for it; until the partition has a leader the answer is
COORDINATOR_NOT_AVAILABLE and clients retry. A transactional id's
coordinator (key_type 1) is, the same way, the leader of its
`__transaction_state` partition, the topic created on first lookup.
A share-partition's share coordinator (key_type 2, key
"group:topic_id:partition", KIP-932) is the leader of its
`__share_group_state` partition. Unknown key types get INVALID_REQUEST;
v1+ carries an error_message.
"""
from __future__ import annotations

import logging

from kcore.coordinator.group.manager import OFFSETS_TOPIC
from kcore.coordinator.share.records import parse_coordinator_key
from kcore.coordinator.share.state_store import SHARE_STATE_TOPIC
from kcore.coordinator.txn.manager import TRANSACTION_STATE_TOPIC
from kcore.handlers.authz import allowed_on_cluster, group_allowed, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicError
from kcore.protocol.constants import GROUP_KEY_TYPE, SHARE_KEY_TYPE, TRANSACTION_KEY_TYPE
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

log = logging.getLogger(__name__)



async def handle(broker: BrokerFacade, context, request):
    body = request.body
    key_type = body.key_type if request.api_version >= 1 else GROUP_KEY_TYPE
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
        return _error(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    if key_type == SHARE_KEY_TYPE:
        return await _share_coordinator(broker, context, body.key)
    if key_type == TRANSACTION_KEY_TYPE:
        if not txn_allowed(broker, context, AclOperation.DESCRIBE, body.key):
            return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          "DESCRIBE on the transactional id is needed")
        txn_manager = broker.txn_coordinator.manager
        return await _lookup(broker, context, txn_manager.ensure_topic, TRANSACTION_STATE_TOPIC,
                             txn_manager.partition_for(body.key))
    if not group_allowed(broker, context, AclOperation.DESCRIBE, body.key):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED, "DESCRIBE on the group is needed")
    manager = broker.group_coordinator.manager
    return await _lookup(broker, context, manager.ensure_topic, OFFSETS_TOPIC,
                         manager.partition_for(body.key))


async def _share_coordinator(broker: BrokerFacade, context, key: str) -> dict:
    """Only brokers ask (CLUSTER_ACTION on the cluster with an authorizer)."""
    if not allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "CLUSTER_ACTION is needed")
    store = broker.share_groups.store
    try:
        share_key = parse_coordinator_key(key)
    except ValueError as exc:
        return _error(ErrorCode.INVALID_REQUEST, str(exc))
    return await _lookup(broker, context, store.ensure_topic, SHARE_STATE_TOPIC,
                         store.partition_for(share_key))


async def _lookup(broker: BrokerFacade, context, ensure_topic, topic: str, index: int) -> dict:
    try:
        await ensure_topic()
    except (TopicError, OSError) as exc:
        log.error("cannot create %s: %s", topic, exc)
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic} is unavailable: {exc}")
    leader = broker.replica_manager.metadata_cache.leader_of(topic, index)
    if leader is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not elected yet")
    return _found(leader.broker_id, *leader.endpoint(context.listener))


def _found(broker_id: int, host: str, port: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "node_id": broker_id, "host": host, "port": port}


def _error(code: int, message: str) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "node_id": -1, "host": "", "port": -1}

"""AddOffsetsToTxn (key 25): the transaction will commit offsets of a
group, so its markers must reach the group's __consumer_offsets partition."""
from __future__ import annotations

from kcore.coordinator.group.manager import OFFSETS_TOPIC
from kcore.handlers import txn_errors
from kcore.handlers.authz import group_allowed, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    code: int
    if not txn_allowed(broker, context, AclOperation.WRITE, body.transactional_id):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not group_allowed(broker, context, AclOperation.READ, body.group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not body.group_id:
        code = ErrorCode.INVALID_GROUP_ID
    else:
        manager = broker.group_coordinator.manager
        await manager.maybe_create_topic()
        code = await broker.txn_coordinator.add_partitions(
            body.transactional_id, body.producer_id, body.producer_epoch,
            {(OFFSETS_TOPIC, manager.partition_for(body.group_id))})
    return {"throttle_time_ms": 0,
            "error_code": txn_errors.for_version(ApiKey.ADD_OFFSETS_TO_TXN, request.api_version,
                                                 code)}

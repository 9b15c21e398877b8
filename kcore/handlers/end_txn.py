"""EndTxn (key 26): commit or abort the producer's transaction. Answered
once PrepareCommit/PrepareAbort is on the __transaction_state ISR; the
markers follow (kcore.coordinator.txn.coordinator)."""
from __future__ import annotations

from kcore.handlers import txn_errors
from kcore.handlers.authz import txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not txn_allowed(broker, context, AclOperation.WRITE, body.transactional_id):
        return {"throttle_time_ms": 0,
                "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    code = await broker.txn_coordinator.end_transaction(
        body.transactional_id, body.producer_id, body.producer_epoch, body.committed)
    return {"throttle_time_ms": 0,
            "error_code": txn_errors.for_version(ApiKey.END_TXN, request.api_version, code)}

"""InitProducerId (key 22): a producer id and epoch, for an idempotent
producer (no transactional id: any broker hands out a fresh id) or a
transactional one (its coordinator bumps the id's epoch, fencing older
producers with the same transactional id; kcore.coordinator.txn)."""
from __future__ import annotations

from kcore.handlers import txn_errors
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey

FIRST_EXPECTED_PRODUCER_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    expected = ((body.producer_id, body.producer_epoch)
                if request.api_version >= FIRST_EXPECTED_PRODUCER_VERSION else (-1, -1))
    result = await broker.txn_coordinator.init_producer_id(
        body.transactional_id, body.transaction_timeout_ms, *expected)
    return {"throttle_time_ms": 0,
            "error_code": txn_errors.for_version(ApiKey.INIT_PRODUCER_ID, request.api_version,
                                                 result.error_code),
            "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}

"""InitProducerId (key 22): a producer id and epoch for an idempotent
producer. Transactional ids need the transaction coordinator; until it
exists they are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
clients report as a clear authorization error instead of retrying."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if body.transactional_id is not None:
        return {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1,
                "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "producer_id": await broker.producer_ids.next_id(), "producer_epoch": 0}

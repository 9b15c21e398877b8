"""UpdateMetadata (key 6, v7 from kcore controllers): the live brokers and
partition states every broker answers Metadata from; partitions with
leader -2 belong to a deleted topic. Refused from an older controller
(STALE_CONTROLLER_EPOCH)."""
from __future__ import annotations

from kcore.controller import wire
from kcore.handlers.base import BrokerFacade
from kcore.handlers.leader_and_isr import stale_broker_epoch
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if stale_broker_epoch(broker, body.broker_epoch):
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
    brokers, states, deleted = wire.update_metadata_contents(body)
    await broker.controller.refresh_topics([s.topic for s in states])
    code = broker.replica_manager.on_update_metadata(body.controller_id, body.controller_epoch,
                                                     brokers, states, deleted)
    return {"error_code": code}

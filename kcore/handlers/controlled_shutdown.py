"""ControlledShutdown (key 7, v3; at the controller): a broker stopping on
SIGTERM asks the controller to move its leaderships away first. Answered
with the partitions it still leads (none when every one had another
in-sync replica); NOT_CONTROLLER on a broker that is not the controller,
STALE_BROKER_EPOCH for an earlier registration of the asking broker."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    code, remaining = await broker.controller.controlled_shutdown(body.broker_id, body.broker_epoch)
    return {"error_code": code,
            "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}

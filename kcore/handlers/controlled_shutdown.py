"""ControlledShutdown (key 7, v3; at the controller): a broker stopping on
SIGTERM asks the controller to move its leaderships away first. Answered
with the partitions it still leads (none when every one had another
in-sync replica); NOT_CONTROLLER on a broker that is not the controller,
STALE_BROKER_EPOCH for an earlier registration of the asking broker."""
from __future__ import annotations

from kcore.controller.zk_state import ControllerMovedError
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    active = broker.controller.active_controller()
    if active is None:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    try:
        code, remaining = await active.call("controlled_shutdown", body.broker_id,
                                            body.broker_epoch)
    except ControllerMovedError:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    return {"error_code": code,
            "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}

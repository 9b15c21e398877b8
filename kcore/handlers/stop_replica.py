"""StopReplica (key 5, v3 from kcore controllers): stop fetching or serving
these partitions, deleting their logs when the controller says so (a
deleted topic). Refused from an older controller (STALE_CONTROLLER_EPOCH);
a partition whose known leader epoch is newer than the request's gets
FENCED_LEADER_EPOCH and is left alone."""
from __future__ import annotations

from kcore.controller import wire
from kcore.handlers.base import BrokerFacade
from kcore.handlers.leader_and_isr import stale_broker_epoch
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if stale_broker_epoch(broker, body.broker_epoch):
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": []}
    partitions = wire.stop_replica_partitions(body)
    errors = broker.replica_manager.on_stop_replica(body.controller_epoch, partitions)
    top = ErrorCode.NONE
    if body.controller_epoch < broker.replica_manager.controller_epoch:
        top = ErrorCode.STALE_CONTROLLER_EPOCH
    return {"error_code": top, "partition_errors": wire.partition_errors(errors)}

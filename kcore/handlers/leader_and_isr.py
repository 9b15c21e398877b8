"""LeaderAndIsr (key 4, v5 from kcore controllers): become the leader or a
follower of each partition named, as the controller decided.

Refused whole with STALE_CONTROLLER_EPOCH from an older controller, or with
STALE_BROKER_EPOCH when it was meant for an earlier registration of this
broker (it restarted since); per partition, a state that is not newer than
the one known is refused with STALE_CONTROLLER_EPOCH (ReplicaManager). A
request of type FULL names every partition this broker hosts: logs it
does not name, or names under another topic id, are set aside as strays
first (ReplicaManager)."""
from __future__ import annotations

from kcore.controller import wire
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


def stale_broker_epoch(broker, broker_epoch: int) -> bool:
    """A request addressed to an earlier registration of this broker."""
    return 0 <= broker_epoch < broker.controller.broker_epoch


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    states, leaders = wire.leader_and_isr_states(body)
    if stale_broker_epoch(broker, body.broker_epoch):
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": [], "topics": []}
    await broker.controller.refresh_topics([s.topic for s in states])
    full = request.api_version >= 5 and body.type == wire.FULL_REQUEST
    errors = broker.replica_manager.on_leader_and_isr(body.controller_id, body.controller_epoch,
                                                      states, leaders, full)
    top = ErrorCode.NONE
    if errors and all(code == ErrorCode.STALE_CONTROLLER_EPOCH for code in errors.values()) \
            and body.controller_epoch < broker.replica_manager.controller_epoch:
        top = ErrorCode.STALE_CONTROLLER_EPOCH
    if request.api_version >= 5:
        return {"error_code": top, "topics": wire.leader_and_isr_errors(errors, states)}
    return {"error_code": top, "partition_errors": [
        {"topic_name": topic, "partition_index": index, "error_code": code}
        for (topic, index), code in sorted(errors.items())]}

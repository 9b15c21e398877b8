"""AlterPartition (key 56, v1; at the controller, KIP-497): a leader's
proposed ISR change, decided by the controller, which alone writes
partition state. Per partition: FENCED_LEADER_EPOCH for a stale leader
epoch, INVALID_UPDATE_VERSION for a stale partition epoch,
NOT_LEADER_OR_FOLLOWER when the sender does not lead it, INELIGIBLE_REPLICA
for a joining replica that is not live; otherwise the committed state.
NOT_CONTROLLER on a broker that is not the controller, STALE_BROKER_EPOCH
for an earlier registration of the sender."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    items = [((topic.topic_name, p.partition_index), p.leader_epoch, list(p.new_isr),
              p.partition_epoch) for topic in body.topics for p in topic.partitions]
    code, results = await broker.controller.alter_partition(body.broker_id, body.broker_epoch, items)
    if code != ErrorCode.NONE:
        return _error(code)
    topics: dict[str, list[dict]] = {}
    for (topic, index), (error, state) in results.items():
        topics.setdefault(topic, []).append({
            "partition_index": index, "error_code": error,
            "leader_id": state.leader if state else -1,
            "leader_epoch": state.leader_epoch if state else -1,
            "isr": list(state.isr) if state else [], "leader_recovery_state": 0,
            "partition_epoch": state.partition_epoch if state else -1})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": [{"topic_name": t, "partitions": p} for t, p in topics.items()]}


def _error(code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}

"""ReadShareGroupState (key 84): a share-partition's state from its share
coordinator; a share-partition never initialized answers start offset -1
and no batches. A leader epoch older than the one written is fenced
(FENCED_LEADER_EPOCH)."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_state_common import error, per_partition
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    store = broker.share_groups.store

    async def answer(key, partition):
        code, state = store.read(key, partition.leader_epoch)
        if code != ErrorCode.NONE:
            return {**error(partition.partition, code), "state_epoch": 0, "start_offset": -1,
                    "state_batches": []}
        if state is None:
            return {**error(partition.partition, code), "state_epoch": 0, "start_offset": -1,
                    "state_batches": []}
        return {**error(partition.partition, code), "state_epoch": state.state_epoch,
                "start_offset": state.start_offset,
                "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                   "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                                  for b in state.state_batches]}

    return await per_partition(broker, context, request.body, answer)

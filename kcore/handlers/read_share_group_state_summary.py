"""ReadShareGroupStateSummary (key 87): a share-partition's start offset,
epochs and (v1, KIP-1226) delivery complete count, without its batches."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_state_common import error, per_partition
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    store = broker.share_groups.store

    async def answer(key, partition):
        code, state = store.read(key, -1)
        if code != ErrorCode.NONE or state is None:
            return {**error(partition.partition, code), "state_epoch": 0, "leader_epoch": -1,
                    "start_offset": -1, "delivery_complete_count": -1}
        return {**error(partition.partition, code), "state_epoch": state.state_epoch,
                "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
                "delivery_complete_count": state.delivery_complete_count}

    return await per_partition(broker, context, request.body, answer)

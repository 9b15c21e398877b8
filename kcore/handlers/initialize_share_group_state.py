"""InitializeShareGroupState (key 83): the share coordinator sets a
share-partition's start offset and state epoch (a state epoch older than
the stored one: FENCED_STATE_EPOCH)."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_state_common import error, per_partition


async def handle(broker: BrokerFacade, context, request):
    store = broker.share_groups.store

    async def answer(key, partition):
        return error(partition.partition, await store.initialize(key, partition.state_epoch,
                                                                 partition.start_offset))

    return await per_partition(broker, context, request.body, answer)

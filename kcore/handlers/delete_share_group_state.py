"""DeleteShareGroupState (key 86): the share coordinator writes a
tombstone for a share-partition's state."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_state_common import error, per_partition


async def handle(broker: BrokerFacade, context, request):
    store = broker.share_groups.store

    async def answer(key, partition):
        return error(partition.partition, await store.delete(key))

    return await per_partition(broker, context, request.body, answer)

"""WriteShareGroupState (key 85): a share-partition's leader writes its
whole state to the share coordinator, which appends it to
``__share_group_state`` and answers once the in-sync replicas have it.
v1 carries the delivery complete count (KIP-1226)."""
from __future__ import annotations

from kcore.coordinator.share.records import ShareState
from kcore.coordinator.share.share_partition import StateBatch
from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_state_common import error, per_partition

DELIVERY_COMPLETE_COUNT_VERSION = 1


async def handle(broker: BrokerFacade, context, request):
    store = broker.share_groups.store
    with_count = request.api_version >= DELIVERY_COMPLETE_COUNT_VERSION

    async def answer(key, partition):
        state = ShareState(0, partition.state_epoch, partition.leader_epoch, partition.start_offset,
                           partition.delivery_complete_count if with_count else -1,
                           [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                            for b in partition.state_batches])
        return error(partition.partition, await store.write(key, state))

    return await per_partition(broker, context, request.body, answer)

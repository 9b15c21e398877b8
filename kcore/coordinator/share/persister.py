"""How a share-partition's leader reads and writes its state (Kafka's
``DefaultStatePersister``): through the share coordinator of the
share-partition, the leader of its ``__share_group_state`` partition.

When that leader is this broker the store is called directly; otherwise
Read/Write/Initialize/DeleteShareGroupState go to it over an inter-broker
connection (replica fetchers' listener and security). NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS are retried
for a while (a coordinator that moves or is still loading), as Kafka's
persister does.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.coordinator.share.records import ShareKey, ShareState
from kcore.coordinator.share.share_partition import StateBatch
from kcore.coordinator.share.state_store import SHARE_STATE_TOPIC, ShareStateStore
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0
# Retries of a coordinator that moves or loads: Kafka's persister backs off
# from 100 ms; 30 tries cover a leader election of a few seconds.
RETRY_BACKOFF_S = 0.1
RETRIES = 30
_RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS})


class SharePersister:
    def __init__(self, broker_id: int, store: ShareStateStore, metadata_cache: MetadataCache) -> None:
        self.broker_id = broker_id
        self.store = store
        self.metadata_cache = metadata_cache
        self._pool = BrokerPool(f"kcore-share-persister-{broker_id}", metadata_cache.address_of,
                                REQUEST_TIMEOUT_S)

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        async def local() -> tuple[int, ShareState | None]:
            return self.store.read(key, leader_epoch)

        async def remote(connection) -> tuple[int, ShareState | None]:
            response = await connection.request(ApiKey.READ_SHARE_GROUP_STATE, {
                "group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [
                    {"partition": key.partition, "leader_epoch": leader_epoch}]}]}, version=0)
            result = response.results[0].partitions[0]
            if result.error_code != ErrorCode.NONE:
                return result.error_code, None
            if result.start_offset < 0:
                return ErrorCode.NONE, None
            batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                       for b in result.state_batches]
            return ErrorCode.NONE, ShareState(0, result.state_epoch, leader_epoch, result.start_offset,
                                              -1, batches)

        return await self._call(key, local, remote)

    async def write(self, key: ShareKey, state: ShareState) -> int:
        async def local() -> tuple[int, None]:
            return await self.store.write(key, state), None

        async def remote(connection) -> tuple[int, None]:
            response = await connection.request(ApiKey.WRITE_SHARE_GROUP_STATE, {
                "group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [{
                    "partition": key.partition, "state_epoch": state.state_epoch,
                    "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
                    "delivery_complete_count": state.delivery_complete_count,
                    "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                       "delivery_state": b.delivery_state,
                                       "delivery_count": b.delivery_count}
                                      for b in state.state_batches]}]}]}, version=1)
            return response.results[0].partitions[0].error_code, None

        return (await self._call(key, local, remote))[0]

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        async def local() -> tuple[int, None]:
            return await self.store.initialize(key, state_epoch, start_offset), None

        async def remote(connection) -> tuple[int, None]:
            response = await connection.request(ApiKey.INITIALIZE_SHARE_GROUP_STATE, {
                "group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [{
                    "partition": key.partition, "state_epoch": state_epoch,
                    "start_offset": start_offset}]}]}, version=0)
            return response.results[0].partitions[0].error_code, None

        return (await self._call(key, local, remote))[0]

    async def delete(self, key: ShareKey) -> int:
        async def local() -> tuple[int, None]:
            return await self.store.delete(key), None

        async def remote(connection) -> tuple[int, None]:
            response = await connection.request(ApiKey.DELETE_SHARE_GROUP_STATE, {
                "group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [
                    {"partition": key.partition}]}]}, version=0)
            return response.results[0].partitions[0].error_code, None

        return (await self._call(key, local, remote))[0]

    async def _call(self, key: ShareKey, local, remote):
        try:
            await self.store.ensure_topic()
        except Exception as exc:  # noqa: BLE001 - answered as the coordinator's absence
            log.warning("cannot create %s: %s", SHARE_STATE_TOPIC, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        result: tuple = (ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
        for _ in range(RETRIES):
            leader = self.metadata_cache.leader_of(SHARE_STATE_TOPIC, self.store.partition_for(key))
            if leader is None:
                result = (ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
            elif leader.broker_id == self.broker_id:
                result = await local()
            else:
                result = await self._remote(leader.broker_id, remote)
            if result[0] not in _RETRIABLE:
                return result
            await asyncio.sleep(RETRY_BACKOFF_S)
        return result

    async def _remote(self, broker_id: int, remote):
        try:
            connection = await self._pool.connection(broker_id)
            return await asyncio.wait_for(remote(connection), REQUEST_TIMEOUT_S)
        except (BrokerConnectionError, KafkaError, OSError, LookupError, TimeoutError) as exc:
            log.debug("share state request to broker %d failed: %s", broker_id, exc)
            self._pool.drop(broker_id)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None

    def close(self) -> None:
        self._pool.close()

"""Delivery of one transaction's COMMIT or ABORT markers to the leaders of
its partitions (Kafka's TransactionMarkerChannelManager and its completion
handler).

The partitions are grouped by their current leader (the metadata cache);
each leader gets one WriteTxnMarkers request, this broker's own partitions
a direct call. Per partition the answer decides:

- NONE: done. A topic that no longer exists is done too.
- NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
  REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, no leader, a lost connection:
  retried after ``RETRY_BACKOFF_S`` with the leader the cache names then.
- INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: a newer producer
  or coordinator owns the transaction; delivery stops and the transaction
  is left to it.
- UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT: the partition could
  never have taken the transaction's data; done.

Delivery also stops as soon as ``is_current()`` turns false (this broker
stopped coordinating the transaction's partition).

Not thread-safe: the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.metadata import TopicPartition
from kcore.protocol.api_keys import INTER_BROKER_VERSIONS, ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
REQUEST_TIMEOUT_S = 30.0


_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION,
                   ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})
_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED,
                     ErrorCode.TRANSACTION_COORDINATOR_FENCED})


@dataclass(frozen=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


class LocalMarkerWriter(Protocol):
    """This broker's replica manager: writes markers to partitions it leads."""

    def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          commit: bool, partitions: list[TopicPartition]
                          ) -> Awaitable[dict[TopicPartition, int]]: ...


class MarkerSender:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache, local: LocalMarkerWriter):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.local = local
        self._pool = BrokerPool(f"kcore-txn-coordinator-{broker_id}", metadata_cache.address_of,
                                REQUEST_TIMEOUT_S)

    async def deliver(self, marker: TxnMarker, partitions: set[TopicPartition],
                      is_current: Callable[[], bool],
                      on_written: Callable[[TopicPartition], None]) -> bool:
        """Write ``marker`` to every partition; True once all have it (each
        reported through ``on_written``), False when delivery stopped."""
        pending = set(partitions)
        while pending:
            if not is_current():
                return False
            by_broker = self._route(pending, on_written)
            answers = await asyncio.gather(*(self._send(broker_id, marker, targets)
                                             for broker_id, targets in by_broker.items()))
            if not is_current():
                return False
            for errors in answers:
                for partition, code in errors.items():
                    if code in _DONE:
                        pending.discard(partition)
                        on_written(partition)
                    elif code in _FENCED:
                        log.info("markers of producer %d stopped at %s-%d: %s", marker.producer_id,
                                 partition[0], partition[1], ErrorCode(code).name)
                        return False
            if pending:
                await asyncio.sleep(RETRY_BACKOFF_S)
        return True

    def _route(self, pending: set[TopicPartition],
               on_written: Callable[[TopicPartition], None]) -> dict[int, list[TopicPartition]]:
        by_broker: dict[int, list[TopicPartition]] = {}
        for topic, index in sorted(pending):
            if not self.metadata_cache.contains(topic):
                pending.discard((topic, index))  # deleted: nothing left to mark
                on_written((topic, index))
                continue
            leader = self.metadata_cache.leader_of(topic, index)
            if leader is not None:
                by_broker.setdefault(leader.broker_id, []).append((topic, index))
        return by_broker

    async def _send(self, broker_id: int, marker: TxnMarker,
                    partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        if broker_id == self.broker_id:
            return await self.local.write_txn_markers(
                marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.commit,
                partitions)
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        body = {"markers": [{
            "producer_id": marker.producer_id, "producer_epoch": marker.producer_epoch,
            "transaction_result": marker.commit, "coordinator_epoch": marker.coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()]}]}
        try:
            connection = await self._pool.connection(broker_id)
            response = await connection.request(
                ApiKey.WRITE_TXN_MARKERS, body,
                version=INTER_BROKER_VERSIONS[ApiKey.WRITE_TXN_MARKERS])
        except (BrokerConnectionError, KafkaError, OSError, LookupError) as exc:
            log.debug("WriteTxnMarkers to broker %d failed: %s", broker_id, exc)
            self._pool.drop(broker_id)
            return {}
        return {(t.name, p.partition_index): p.error_code
                for result in response.markers for t in result.topics for p in t.partitions}

    def close(self) -> None:
        self._pool.close()

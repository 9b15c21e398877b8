"""Fetch and ListOffsets as single requests, and records out of fetched bytes.

Fetch (key 1, v4+)::

    replica_id (-1 for consumers, the broker id for followers), max_wait_ms,
    min_bytes, max_bytes, isolation_level (0 read_uncommitted, 1
    read_committed), session_id 0 / session_epoch -1 (no fetch session,
    KIP-227), topics [topic, partitions [partition, current_leader_epoch,
    fetch_offset, log_start_offset, partition_max_bytes]],
    forgotten_topics_data [], rack_id

The answer per partition holds error_code, high_watermark,
last_stable_offset, log_start_offset, aborted_transactions and ``records``:
whole v2 batches, the first of which may start below the fetch offset (a
batch is never split), possibly followed by a partial batch cut at the size
limit (KIP-74). ``records_from`` turns that into the records at or after
the fetch offset and the next offset to fetch.

ListOffsets (key 2, v1+): per partition a timestamp, or -2 (earliest) /
-1 (latest); the answer is the first offset whose timestamp is at or after
it, or -1 when no record is that recent.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kcore.client.errors import KafkaError
from kcore.client.metadata import TopicPartition
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import (
    CONSUMER_REPLICA_ID,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)
from kcore.protocol.records import ControlType, Record, iter_batches

__all__ = ["FetchedPartition", "FetchPosition", "ListedOffset", "FetchedRecords",
           "fetch", "list_offsets", "records_from"]



@dataclass(frozen=True, slots=True)
class FetchPosition:
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: memoryview | bytes
    aborted_transactions: tuple[tuple[int, int], ...] = ()  # (producer_id, first_offset)


@dataclass(frozen=True, slots=True)
class ListedOffset:
    offset: int
    timestamp: int
    leader_epoch: int = -1


@dataclass(slots=True)
class FetchedRecords:
    records: list[Record] = field(default_factory=list)
    next_offset: int = 0
    whole_batches: int = 0
    partial_batch: bool = False


async def fetch(connection, positions: Mapping[TopicPartition, FetchPosition], *,
                max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 50 << 20,
                isolation_level: int = READ_UNCOMMITTED,
                replica_id: int = CONSUMER_REPLICA_ID,
                timeout_s: float | None = None) -> dict[TopicPartition, FetchedPartition]:
    """One Fetch request for ``positions``; per-partition errors stay in the result."""
    by_topic: dict[str, list[dict]] = {}
    for tp, position in positions.items():
        by_topic.setdefault(tp.topic, []).append({
            "partition": tp.partition, "current_leader_epoch": position.current_leader_epoch,
            "fetch_offset": position.fetch_offset, "log_start_offset": position.log_start_offset,
            "partition_max_bytes": position.partition_max_bytes})
    body = {"replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": isolation_level, "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": parts} for topic, parts in by_topic.items()],
            "forgotten_topics_data": [], "rack_id": ""}
    if timeout_s is None:
        timeout_s = connection.request_timeout_s + max_wait_ms / 1000
    response = await connection.request(ApiKey.FETCH, body, timeout_s=timeout_s)
    if response.error_code:
        raise KafkaError(response.error_code, context="Fetch")
    fetched = {}
    for topic in response.responses:
        for part in topic.partitions:
            aborted = tuple((a.producer_id, a.first_offset)
                            for a in (part.aborted_transactions or ()))
            fetched[TopicPartition(topic.topic, part.partition_index)] = FetchedPartition(
                topic.topic, part.partition_index, part.error_code, part.high_watermark,
                part.last_stable_offset, part.log_start_offset, part.records or b"", aborted)
    return fetched


async def list_offsets(connection, timestamps: Mapping[TopicPartition, int], *,
                       isolation_level: int = READ_UNCOMMITTED
                       ) -> dict[TopicPartition, ListedOffset]:
    """One ListOffsets request; raises KafkaError for the first partition that failed."""
    by_topic: dict[str, list[dict]] = {}
    for tp, timestamp in timestamps.items():
        by_topic.setdefault(tp.topic, []).append({
            "partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": timestamp})
    response = await connection.request(ApiKey.LIST_OFFSETS, {
        "replica_id": CONSUMER_REPLICA_ID, "isolation_level": isolation_level,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]})
    listed = {}
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code:
                raise KafkaError(part.error_code, context=f"{topic.name}-{part.partition_index}")
            listed[TopicPartition(topic.name, part.partition_index)] = ListedOffset(
                part.offset, part.timestamp, part.leader_epoch)
    return listed


def records_from(fetched: FetchedPartition, fetch_offset: int, *,
                 isolation_level: int = READ_UNCOMMITTED) -> FetchedRecords:
    """Records at or after ``fetch_offset`` in the whole batches of ``fetched``.

    Control batches (transaction markers) are skipped but advance the next
    offset; with READ_COMMITTED, batches of aborted transactions are skipped
    too. A trailing partial batch is left for the next fetch and reported in
    ``partial_batch``.
    """
    result = FetchedRecords(next_offset=fetch_offset)
    aborted = _AbortedTransactions(fetched.aborted_transactions
                                   if isolation_level == READ_COMMITTED else ())
    consumed = 0
    for batch in iter_batches(fetched.records):
        consumed += batch.size_in_bytes
        result.whole_batches += 1
        if batch.last_offset < fetch_offset:
            continue
        result.next_offset = batch.next_offset
        aborted.advance_to(batch.last_offset)
        if batch.is_control:
            if batch.control_type is ControlType.ABORT:
                aborted.end(batch.producer_id)
            continue
        if batch.is_transactional and aborted.is_aborted(batch.producer_id):
            continue
        if batch.base_offset >= fetch_offset:
            result.records.extend(batch.records())
        else:
            result.records.extend(r for r in batch.records()
                                  if r.offset is not None and r.offset >= fetch_offset)
    result.partial_batch = consumed < len(fetched.records)
    return result


class _AbortedTransactions:
    """Which producers' batches belong to an aborted transaction (Kafka's Fetcher logic).

    A transaction starting at ``first_offset`` is aborted from that offset
    until the producer's ABORT marker.
    """

    def __init__(self, aborted: Sequence[tuple[int, int]]) -> None:
        self._upcoming = sorted(aborted, key=lambda entry: entry[1])
        self._active: set[int] = set()

    def advance_to(self, last_offset: int) -> None:
        """Activate the transactions that start in a batch ending at ``last_offset``."""
        while self._upcoming and self._upcoming[0][1] <= last_offset:
            self._active.add(self._upcoming.pop(0)[0])

    def is_aborted(self, producer_id: int) -> bool:
        return producer_id in self._active

    def end(self, producer_id: int) -> None:
        self._active.discard(producer_id)

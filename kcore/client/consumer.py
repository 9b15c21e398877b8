"""Consumer: assigned partitions, positions and a fetch loop per leader.

No consumer group: the caller assigns partitions and starting positions
(``assign``, ``seek_to_beginning``, ``seek_to_end``, ``seek_to_timestamp``).
``poll()`` keeps one Fetch in flight per partition leader and returns what
the first of them brings, so a leader that has nothing (and long-polls
``max_wait_ms``) does not hold back another that has data.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from kcore.client.client import KafkaClient
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.fetch import (
    FetchedPartition,
    FetchPosition,
    fetch,
    list_offsets,
    records_from,
)
from kcore.client.metadata import TopicPartition
from kcore.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, READ_UNCOMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.protocol.records import Record

__all__ = ["Consumer", "OffsetReset"]

# Errors after which the leader may have moved: refresh metadata, fetch again.
_REFRESH_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.OFFSET_NOT_AVAILABLE,
})
# librdkafka's fetch.max.bytes default is 50 MiB and max.partition.fetch.bytes
# 1 MiB, as in Java; a partition whose next batch is larger gets its limit
# doubled until a whole batch fits.
DEFAULT_MAX_BYTES = 50 << 20
DEFAULT_PARTITION_MAX_BYTES = 1 << 20
# Long-poll time of each Fetch (Java fetch.max.wait.ms is 500 ms).
DEFAULT_MAX_WAIT_MS = 500
# Pause after a failed fetch before the same leader is asked again.
RETRY_BACKOFF_S = 0.1


class OffsetReset:
    """What to do when a position is out of range (Java ``auto.offset.reset``)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


Polled = dict[TopicPartition, list[Record]]


class Consumer:
    """Fetches assigned partitions from their leaders (see the module doc).

    Concurrency contract: owned by one event loop; one coroutine polls at a
    time. Seeks may happen between polls: a fetch answer for a position that
    has moved since it was asked is dropped.
    """

    def __init__(self, client: KafkaClient, *, isolation_level: int = READ_UNCOMMITTED,
                 max_wait_ms: int = DEFAULT_MAX_WAIT_MS, min_bytes: int = 1,
                 max_bytes: int = DEFAULT_MAX_BYTES,
                 partition_max_bytes: int = DEFAULT_PARTITION_MAX_BYTES,
                 auto_offset_reset: str = OffsetReset.EARLIEST) -> None:
        self.client = client
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.auto_offset_reset = auto_offset_reset
        self.positions: dict[TopicPartition, int] = {}
        self.high_watermarks: dict[TopicPartition, int] = {}
        self._partition_bytes: dict[TopicPartition, int] = {}
        self._inflight: dict[int, asyncio.Task] = {}

    # --------------------------------------------------------- assignment

    async def partitions_of(self, topic: str) -> list[TopicPartition]:
        """Every partition of an existing topic; KafkaError if the topic is unknown."""
        metadata = await self.client.refresh_metadata([topic])
        info = metadata.topics.get(topic)
        if info is None or info.error_code:
            raise KafkaError(info.error_code if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             context=f"topic {topic}")
        return [TopicPartition(topic, p) for p in info.partitions]

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Add partitions at the given offsets (or move existing ones there)."""
        self.positions.update(positions)

    def unassign(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)

    async def seek_to_beginning(self, partitions: Iterable[TopicPartition]) -> None:
        self.assign(await self.offsets_for_times(dict.fromkeys(partitions, EARLIEST_TIMESTAMP)))

    async def seek_to_end(self, partitions: Iterable[TopicPartition]) -> None:
        self.assign(await self.offsets_for_times(dict.fromkeys(partitions, LATEST_TIMESTAMP)))

    async def seek_to_timestamp(self, partitions: Iterable[TopicPartition],
                                timestamp_ms: int) -> None:
        """First offset with a timestamp >= ``timestamp_ms``; the end where there is none."""
        partitions = list(partitions)
        found = await self.offsets_for_times(dict.fromkeys(partitions, timestamp_ms))
        missing = [tp for tp, offset in found.items() if offset < 0]
        if missing:
            found.update(await self.offsets_for_times(dict.fromkeys(missing, LATEST_TIMESTAMP)))
        self.assign(found)

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, int]:
        """ListOffsets at each partition's leader: timestamp (or -2/-1) -> offset (-1: none)."""
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, timestamp in timestamps.items():
            leader = await self._leader(tp)
            by_leader.setdefault(leader, {})[tp] = timestamp
        offsets: dict[TopicPartition, int] = {}
        for leader, requested in by_leader.items():
            connection = await self.client.connection(leader)
            listed = await list_offsets(connection, requested,
                                        isolation_level=self.isolation_level)
            offsets.update({tp: entry.offset for tp, entry in listed.items()})
        return offsets

    async def _leader(self, tp: TopicPartition) -> int:
        leader = self.client.metadata.leader_for(tp.topic, tp.partition)
        if leader < 0:
            await self.client.refresh_metadata([tp.topic])
            leader = self.client.metadata.leader_for(tp.topic, tp.partition)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, context=str(tp))
        return leader

    # -------------------------------------------------------------- polling

    async def poll(self, timeout_s: float) -> Polled:
        """Records fetched within ``timeout_s`` (possibly none), in offset order per partition."""
        if not self.positions:
            await asyncio.sleep(timeout_s)
            return {}
        await self._start_fetches()
        if not self._inflight:
            await asyncio.sleep(min(timeout_s, RETRY_BACKOFF_S))
            return {}
        done, _ = await asyncio.wait(self._inflight.values(), timeout=timeout_s,
                                     return_when=asyncio.FIRST_COMPLETED)
        polled: Polled = {}
        for leader, task in list(self._inflight.items()):
            if task in done:
                del self._inflight[leader]
                for tp, records in (await task).items():
                    polled.setdefault(tp, []).extend(records)
        return polled

    async def close(self) -> None:
        for task in self._inflight.values():
            task.cancel()
        await asyncio.gather(*self._inflight.values(), return_exceptions=True)
        self._inflight.clear()

    async def _start_fetches(self) -> None:
        by_leader: dict[int, dict[TopicPartition, FetchPosition]] = {}
        busy = set(self._inflight)
        for tp, offset in list(self.positions.items()):
            try:
                leader = await self._leader(tp)
            except KafkaError as exc:
                if exc.error_code != ErrorCode.LEADER_NOT_AVAILABLE:
                    raise
                continue
            if leader in busy:
                continue
            by_leader.setdefault(leader, {})[tp] = FetchPosition(
                offset, self._partition_bytes.get(tp, self.partition_max_bytes))
        for leader, positions in by_leader.items():
            self._inflight[leader] = asyncio.ensure_future(self._fetch_from(leader, positions))

    async def _fetch_from(self, leader: int, positions: dict[TopicPartition, FetchPosition]
                          ) -> Polled:
        try:
            connection = await self.client.connection(leader)
            fetched = await fetch(connection, positions, max_wait_ms=self.max_wait_ms,
                                  min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                                  isolation_level=self.isolation_level)
        except BrokerConnectionError:
            await asyncio.sleep(RETRY_BACKOFF_S)
            await self._refresh_quietly([tp.topic for tp in positions])
            return {}
        polled: Polled = {}
        stale_topics = []
        for tp, partition in fetched.items():
            asked = positions.get(tp)
            if asked is None or self.positions.get(tp) != asked.fetch_offset:
                continue
            if partition.error_code in _REFRESH_ERRORS:
                stale_topics.append(tp.topic)
            elif partition.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._reset(tp)
            elif partition.error_code:
                raise KafkaError(partition.error_code, context=str(tp))
            else:
                polled[tp] = self._take(tp, asked, partition)
        if stale_topics:
            await asyncio.sleep(RETRY_BACKOFF_S)
            await self._refresh_quietly(stale_topics)
        return {tp: records for tp, records in polled.items() if records}

    def _take(self, tp: TopicPartition, asked: FetchPosition,
              partition: FetchedPartition) -> list[Record]:
        self.high_watermarks[tp] = partition.high_watermark
        got = records_from(partition, asked.fetch_offset, isolation_level=self.isolation_level)
        if got.whole_batches == 0 and got.partial_batch:
            self._partition_bytes[tp] = asked.partition_max_bytes * 2
        else:
            self._partition_bytes.pop(tp, None)
        self.positions[tp] = got.next_offset
        return got.records

    async def _reset(self, tp: TopicPartition) -> None:
        if self.auto_offset_reset == OffsetReset.NONE:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"offset {self.positions[tp]} is out of range", str(tp))
        if self.auto_offset_reset == OffsetReset.LATEST:
            await self.seek_to_end([tp])
        else:
            await self.seek_to_beginning([tp])

    async def _refresh_quietly(self, topics: list[str]) -> None:
        try:
            await self.client.refresh_metadata(sorted(set(topics)))
        except (KafkaError, BrokerConnectionError):
            pass

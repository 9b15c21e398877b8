"""Producer: per-partition batching (linger), RecordBatch v2, acks and retries.

Produce request (key 0, v3+)::

    transactional_id, acks (0 none, 1 leader, -1 all ISR), timeout_ms,
    topic_data [name, partition_data [index, records (one v2 batch)]]

Records accumulate per partition into a batch that is sent when it holds
``batch_max_records`` records or ``batch_max_bytes`` estimated bytes, when
``linger_ms`` has passed since its first record, or on ``flush()``. Each
partition has at most one batch in flight, so records of one partition are
appended in the order they were sent, retries included; batches of
different partitions are pipelined on the leader connections. A topic's
partition count is read once per producer (from metadata, auto-creating the
topic where the broker allows it).
"""
from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcore.client.client import KafkaClient
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.metadata import TopicPartition
from kcore.client.partitioner import StickyPartitioner
from kcore.metadata import NO_TOPIC_ID
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.compression import CompressionType
from kcore.protocol.constants import ACKS_ALL
from kcore.protocol.errors import ErrorCode
from kcore.protocol.records import Record, build_batch

__all__ = ["Producer", "ProduceResult", "ProducerStats", "ProduceError", "produce_batch",
           "ACKS_ALL"]

# librdkafka's batch.num.messages default is 10000 and Java's batch.size
# 16 KiB; 1000 records / 1 MiB keeps a batch of short lines under one
# request of Kafka's default max.message.bytes (1 MiB + overhead) while
# amortising the per-request round trip over many records.
DEFAULT_BATCH_MAX_RECORDS = 1000
DEFAULT_BATCH_MAX_BYTES = 1 << 20
# Java's linger.ms default is 5 ms since Kafka 4.0.
DEFAULT_LINGER_MS = 5
# Bytes waiting in batches before send() blocks (Java buffer.memory is 32 MiB).
DEFAULT_BUFFER_MAX_BYTES = 32 << 20
# Per-record framing in a batch: length, attributes, timestamp and offset
# deltas, key/value lengths and header count are varints of 1-5 bytes.
RECORD_OVERHEAD_ESTIMATE = 16
# Retries of a retriable error (leader change, timeout, lost connection),
# waiting retry_backoff_ms and refreshing metadata between attempts.
DEFAULT_RETRIES = 5
DEFAULT_RETRY_BACKOFF_MS = 100
# A freshly created topic may answer LEADER_NOT_AVAILABLE for a moment.
METADATA_ATTEMPTS = 20
# The last Produce version that names topics; v13 names them by id (KIP-516).
LAST_PRODUCE_BY_NAME = 12
METADATA_BACKOFF_S = 0.05


@dataclass(frozen=True, slots=True)
class ProduceResult:
    topic: str
    partition: int
    base_offset: int          # -1 with acks=0
    record_count: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class ProducerStats:
    records: int = 0
    batches: int = 0
    bytes: int = 0
    failed_records: int = 0
    retries: int = 0


class ProduceError(KafkaError):
    """Records could not be produced; ``failed_records`` says how many."""

    def __init__(self, cause: KafkaError, failed_records: int) -> None:
        super().__init__(cause.error_code, cause.error_message, cause.context)
        self.failed_records = failed_records


async def produce_batch(connection, topic: str, partition: int, batch: bytes | bytearray, *,
                        acks: int = 1, timeout_ms: int = 30_000,
                        topic_id: uuid.UUID = NO_TOPIC_ID) -> ProduceResult | None:
    """Send one encoded batch in one Produce request; None with acks=0.
    Produce v13+ names the topic by ``topic_id`` (KIP-516); without one
    the request stays at v12, which names it.

    Raises KafkaError with the partition's error code.
    """
    version = connection.version_for(ApiKey.PRODUCE)
    if topic_id == NO_TOPIC_ID:
        version = min(version, LAST_PRODUCE_BY_NAME)
    body = {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "topic_id": topic_id,
                            "partition_data": [{"index": partition, "records": batch}]}]}
    if acks == 0:
        await connection.send_without_response(ApiKey.PRODUCE, body, version=version)
        return None
    response = await connection.request(ApiKey.PRODUCE, body, version=version,
                                        timeout_s=connection.request_timeout_s + timeout_ms / 1000)
    for topic_response in response.responses:
        ours = (topic_response.topic_id == topic_id if version > LAST_PRODUCE_BY_NAME
                else topic_response.name == topic)
        for part in topic_response.partition_responses:
            if ours and part.index == partition:
                if part.error_code:
                    raise KafkaError(part.error_code, part.error_message, f"{topic}-{partition}")
                return ProduceResult(topic, partition, part.base_offset, 0,
                                     part.log_append_time_ms, part.log_start_offset)
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for the partition",
                     f"{topic}-{partition}")


class _Batch:
    __slots__ = ("records", "size", "timer")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.size = 0
        self.timer: asyncio.TimerHandle | None = None


DeliveryCallback = Callable[[TopicPartition, int, "ProduceResult | None"], None]


class Producer:
    """Batching producer over a KafkaClient (see the module doc).

    Concurrency contract: owned by one event loop; ``send()`` may be called
    from several coroutines. Errors are collected, not raised by ``send()``:
    ``flush()`` raises ProduceError for the first failed batch after every
    batch has been sent or given up. ``on_delivery(tp, record_count, result)``
    is called after each batch is acknowledged (result None with acks=0).
    """

    def __init__(self, client: KafkaClient, *, acks: int = 1,
                 compression: int = CompressionType.NONE,
                 linger_ms: float = DEFAULT_LINGER_MS,
                 batch_max_records: int = DEFAULT_BATCH_MAX_RECORDS,
                 batch_max_bytes: int = DEFAULT_BATCH_MAX_BYTES,
                 buffer_max_bytes: int = DEFAULT_BUFFER_MAX_BYTES,
                 request_timeout_ms: int = 30_000, retries: int = DEFAULT_RETRIES,
                 retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
                 partitioner: StickyPartitioner | None = None,
                 on_delivery: DeliveryCallback | None = None) -> None:
        if acks not in (0, 1, ACKS_ALL):
            raise ValueError(f"acks must be 0, 1 or -1 (all), got {acks}")
        self.client = client
        self.acks = acks
        self.compression = CompressionType(compression)
        self.linger_s = linger_ms / 1000
        self.batch_max_records = batch_max_records
        self.batch_max_bytes = batch_max_bytes
        self.buffer_max_bytes = buffer_max_bytes
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.partitioner = partitioner or StickyPartitioner()
        self.stats = ProducerStats()
        self.on_delivery = on_delivery
        self._partition_counts: dict[str, int] = {}
        self._topic_partitions: dict[tuple[str, int], TopicPartition] = {}
        self._open: dict[TopicPartition, _Batch] = {}
        self._ready: dict[TopicPartition, deque[_Batch]] = {}
        self._senders: dict[TopicPartition, asyncio.Task] = {}
        self._buffered_bytes = 0
        self._space = asyncio.Event()
        self._space.set()
        self._first_error: KafkaError | None = None

    # ---------------------------------------------------------------- API

    async def partitions_for(self, topic: str) -> int:
        """Partition count of ``topic``, creating it if the broker auto-creates."""
        info = self.client.metadata.topics.get(topic)
        if info is not None and info.error_code == ErrorCode.NONE and info.partitions:
            return info.num_partitions
        for _ in range(METADATA_ATTEMPTS):
            metadata = await self.client.refresh_metadata([topic], allow_auto_topic_creation=True)
            info = metadata.topics.get(topic)
            if info is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=f"topic {topic}")
            code = info.error_code
            if code == ErrorCode.NONE and info.partitions:
                return info.num_partitions
            if code not in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NONE):
                raise KafkaError(code, context=f"topic {topic}")
            await asyncio.sleep(METADATA_BACKOFF_S)
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, context=f"topic {topic}")

    async def send(self, topic: str, value: bytes | None, *, key: bytes | None = None,
                   headers: Sequence[tuple[str, bytes | None]] = (),
                   partition: int | None = None, timestamp: int | None = None) -> int:
        """Queue one record; returns its partition. Waits while the buffer is full."""
        num_partitions = self._partition_counts.get(topic)
        if num_partitions is None:
            num_partitions = self._partition_counts[topic] = await self.partitions_for(topic)
        sticky = partition is None and key is None
        if partition is None:
            partition = self.partitioner.partition(topic, key, num_partitions)
        elif not 0 <= partition < num_partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"topic has {num_partitions} partitions", f"{topic}-{partition}")
        while self._buffered_bytes >= self.buffer_max_bytes:
            self._space.clear()
            await self._space.wait()
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        record = Record(None, timestamp, key, value, headers)
        size = _estimate_size(record)
        while True:
            tp = self._topic_partition(topic, partition)
            batch = self._open.get(tp)
            if batch is None or (len(batch.records) < self.batch_max_records
                                 and batch.size + size <= self.batch_max_bytes):
                break
            self._seal(tp, num_partitions)
            if not sticky:
                batch = None
                break
            # KIP-480: a full batch moves null keys on to the next partition.
            partition = self.partitioner.partition(topic, None, num_partitions)
        if batch is None:
            batch = self._open[tp] = _Batch()
            batch.timer = asyncio.get_running_loop().call_later(
                self.linger_s, self._seal, tp, num_partitions, batch)
        batch.records.append(record)
        batch.size += size
        self._buffered_bytes += size
        return partition

    def _topic_partition(self, topic: str, partition: int) -> TopicPartition:
        tp = self._topic_partitions.get((topic, partition))
        if tp is None:
            tp = self._topic_partitions[(topic, partition)] = TopicPartition(topic, partition)
        return tp

    async def send_batch(self, topic: str, partition: int,
                         records: Sequence[Record]) -> ProduceResult | None:
        """Produce ``records`` as one batch now, bypassing the accumulator."""
        batch = build_batch(records, codec=self.compression)
        return await self._send_with_retries(TopicPartition(topic, partition), batch,
                                             len(records))

    async def flush(self) -> None:
        """Send every queued record; raise ProduceError if any could not be produced."""
        for tp in list(self._open):
            self._seal(tp)
        while self._senders:
            await asyncio.gather(*self._senders.values(), return_exceptions=True)
        if self._first_error is not None:
            error, self._first_error = self._first_error, None
            failed, self.stats.failed_records = self.stats.failed_records, 0
            raise ProduceError(error, failed)

    async def close(self) -> None:
        await self.flush()

    # ------------------------------------------------------------ internals

    def _seal(self, tp: TopicPartition, num_partitions: int | None = None,
              batch: _Batch | None = None) -> None:
        current = self._open.get(tp)
        if current is None or (batch is not None and current is not batch):
            return
        del self._open[tp]
        if current.timer is not None:
            current.timer.cancel()
        if num_partitions is not None:
            self.partitioner.on_new_batch(tp.topic, num_partitions)
        self._ready.setdefault(tp, deque()).append(current)
        if tp not in self._senders:
            self._senders[tp] = asyncio.ensure_future(self._drain(tp))

    async def _drain(self, tp: TopicPartition) -> None:
        # Leaves _ready and _senders together with no await after the last
        # check of ``ready``, so a batch sealed meanwhile always finds either
        # a live sender or none.
        ready = self._ready[tp]
        try:
            while ready:
                await self._send_one(tp, ready.popleft())
        finally:
            del self._ready[tp]
            del self._senders[tp]

    async def _send_one(self, tp: TopicPartition, batch: _Batch) -> None:
        try:
            encoded = build_batch(batch.records, codec=self.compression)
            await self._send_with_retries(tp, encoded, len(batch.records))
        except (KafkaError, BrokerConnectionError) as exc:
            if not isinstance(exc, KafkaError):
                exc = KafkaError(ErrorCode.NETWORK_EXCEPTION, str(exc), str(tp))
            self.stats.failed_records += len(batch.records)
            if self._first_error is None:
                self._first_error = exc
        finally:
            self._buffered_bytes -= batch.size
            if self._buffered_bytes < self.buffer_max_bytes:
                self._space.set()

    async def _send_with_retries(self, tp: TopicPartition, encoded: bytearray,
                                 record_count: int) -> ProduceResult | None:
        attempt = 0
        while True:
            try:
                connection = await self.client.leader_connection(tp.topic, tp.partition)
                known = self.client.metadata.topics.get(tp.topic)
                result = await produce_batch(connection, tp.topic, tp.partition, encoded,
                                             acks=self.acks, timeout_ms=self.request_timeout_ms,
                                             topic_id=known.topic_id if known else NO_TOPIC_ID)
                break
            except (KafkaError, BrokerConnectionError) as exc:
                retriable = isinstance(exc, BrokerConnectionError) or exc.retriable
                if not retriable or attempt >= self.retries:
                    if isinstance(exc, KafkaError):
                        raise
                    raise KafkaError(ErrorCode.NETWORK_EXCEPTION, str(exc), str(tp)) from exc
                attempt += 1
                self.stats.retries += 1
                await asyncio.sleep(self.retry_backoff_s * attempt)
                await self._refresh_quietly(tp.topic)
        self.stats.records += record_count
        self.stats.batches += 1
        self.stats.bytes += len(encoded)
        if result is not None:
            result = ProduceResult(tp.topic, tp.partition, result.base_offset, record_count,
                                   result.log_append_time_ms, result.log_start_offset)
        if self.on_delivery is not None:
            self.on_delivery(tp, record_count, result)
        return result

    async def _refresh_quietly(self, topic: str) -> None:
        """Refresh before a retry; a failure here shows up as the retry's own error."""
        try:
            await self.client.refresh_metadata([topic])
        except (KafkaError, BrokerConnectionError):
            pass


def _estimate_size(record: Record) -> int:
    size = RECORD_OVERHEAD_ESTIMATE
    if record.key is not None:
        size += len(record.key)
    if record.value is not None:
        size += len(record.value)
    for name, value in record.headers:
        size += len(name) + (len(value) if value is not None else 0) + 2
    return size

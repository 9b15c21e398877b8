"""Reading one offset range in an executor, as rows of Spark's Kafka schema.

A librdkafka consumer assigned to the range's partition at its first
offset (no group membership, no commits) hands over records in batches of
up to ``BATCH`` until the range's end. The end is reached by position,
never by counting records: when a record at or past it arrives or the
partition's end is (compaction, transaction markers and, read_committed,
aborted records leave offsets that no record comes for; librdkafka moves
its position past them). An offset that is gone (``auto.offset.reset`` is
"error") is data loss: an error with failOnDataLoss, else the read goes on
from the earliest offset. No record for ``kafkaConsumer.pollTimeoutMs``
fails the task with a sentence instead of waiting for ever.

read_committed (``kafka.isolation.level``): the driver plans ranges up to
the last stable offset, where the partition's end is for such a reader; a
partition end below the range's end is then an open transaction (a range
from explicit endingOffsets), waited for, not data loss.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kcore.spark.offsets import DataLossError, OffsetRange
from kcore.spark.options import SourceOptions

log = logging.getLogger(__name__)

# Records per consume() call: one call costs ~10 us of Python, a record
# ~1 us; 10k keeps the call overhead near 0.1% and a batch of 1 KiB
# records at ~10 MiB.
BATCH = 10_000
POLL_S = 0.5
# Spark's timestampType column: Kafka's TimestampType ids.
TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}
SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int")
HEADERS_SCHEMA = ", headers array<struct<key: string, value: binary>>"


def kafka_schema(include_headers: bool, value_type: str = "binary") -> str:
    """Spark's Kafka schema; ``value_type`` a struct for values decoded
    through a schema registry (registry_format.py)."""
    return SCHEMA.replace("value binary", f"value {value_type}") + (HEADERS_SCHEMA if include_headers else "")


def to_row(message: Message, include_headers: bool, value_format: Any = None) -> tuple:
    timestamp_type, timestamp = message.timestamp()
    value = message.value()
    if value_format is not None:
        value = value_format.decode(value, f"{message.topic()}-{message.partition()} offset {message.offset()}")
    row: tuple[Any, ...] = (
        message.key(), value, message.topic(), message.partition(), message.offset(),
        datetime.fromtimestamp(timestamp / 1000, tz=UTC) if timestamp >= 0 else None,
        TIMESTAMP_TYPES.get(timestamp_type, -1))
    if include_headers:
        headers: Any = message.headers()  # [(str, bytes)]; typed loosely by confluent-kafka
        row += ([(key, value) for key, value in headers] if headers else None,)
    return row


class RangeReader:
    """Iterate the rows of one OffsetRange (see the module doc)."""

    def __init__(self, rng: OffsetRange, options: SourceOptions):
        self.range = rng
        self.options = options
        self.next_offset = rng.from_offset
        client = options.client
        self._read_committed = client.kafka_params.get("isolation.level") == "read_committed"
        self._consumer = Consumer({
            **client.kafka_params, "bootstrap.servers": client.bootstrap_servers,
            "group.id": options.group_id, "enable.auto.commit": False,
            "auto.offset.reset": "error", "enable.partition.eof": True})

    def rows(self) -> Iterator[tuple]:
        try:
            self._assign(self.next_offset)
            yield from self._consume()
        finally:
            self._consumer.close()

    def _assign(self, offset: int) -> None:
        self._consumer.assign([KafkaTopicPartition(self.range.topic, self.range.partition, offset)])

    def _consume(self) -> Iterator[tuple]:
        rng, include_headers = self.range, self.options.include_headers
        last_progress = time.monotonic()
        while self.next_offset < rng.until_offset:
            messages = self._consumer.consume(BATCH, POLL_S)
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.options.poll_timeout_ms / 1000:
                raise TimeoutError(f"no record of {rng.topic}-{rng.partition} at offsets "
                                   f"[{self.next_offset}, {rng.until_offset}) within "
                                   f"kafkaConsumer.pollTimeoutMs={self.options.poll_timeout_ms}"
                                   + (" (read_committed: a transaction open below the range's end holds "
                                      "the last stable offset back)" if self._read_committed else ""))
            for message in messages:
                error = message.error()
                if error is not None:
                    self._on_error(error, message)
                    if self.next_offset >= rng.until_offset:
                        return
                    continue
                offset = message.offset() or 0  # None only on error events
                if offset >= rng.until_offset:
                    self.next_offset = offset
                    return
                self.next_offset = offset + 1
                yield to_row(message, include_headers, self.options.value_format)

    def _on_error(self, error: KafkaError, message: Message) -> None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            # The partition's end: the range ends at or before it (it was
            # planned below the high watermark) unless the log was cut.
            end = message.offset() or 0
            if end < self.range.until_offset and not self._read_committed:
                self._lost(f"the partition ends at {end}, before the range's end {self.range.until_offset}")
                end = self.range.until_offset  # nothing more will come
            self.next_offset = max(self.next_offset, end)
        elif code == KafkaError._AUTO_OFFSET_RESET or code == KafkaError.OFFSET_OUT_OF_RANGE:
            earliest, _ = self._consumer.get_watermark_offsets(
                KafkaTopicPartition(self.range.topic, self.range.partition), timeout=10, cached=False)
            self._lost(f"offset {self.next_offset} is no longer in the partition (earliest {earliest})")
            self.next_offset = max(self.next_offset, earliest)
            if self.next_offset < self.range.until_offset:
                self._assign(self.next_offset)
        elif error.fatal() or not error.retriable():
            raise RuntimeError(f"reading {self.range.topic}-{self.range.partition}: {error.str()}")

    def _lost(self, what: str) -> None:
        where = f"{self.range.topic}-{self.range.partition}"
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{where}: {what}; some data may have been lost. Set the source option "
                                "failOnDataLoss to false to go on.")
        log.warning("%s: %s; skipping (failOnDataLoss=false)", where, what)


def read_range(rng: OffsetRange, options: SourceOptions) -> Iterator[tuple]:
    yield from RangeReader(rng, options).rows()

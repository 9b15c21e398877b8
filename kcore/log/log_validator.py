"""Per-record checks of a produced batch (Kafka ``LogValidator``, KIP-467).

A batch is appended whole or not at all. A record that breaks a rule of
its topic fails the whole batch, and the answer names each such record by
its index in the batch (``record_errors``) with the reason, so a client
fails exactly those records and reports the others as failed because of
them (librdkafka: _INVALID_DIFFERENT_RECORD; kafka-python and the Java
client: a plain KafkaError), which the application may send again.

The rules, checked per record in Kafka's order (the first that fails names
the record):

1. a compacted topic takes only records with a key;
2. with ``message.timestamp.type=CreateTime`` a record's timestamp, when it
   has one (-1 is none), lies within [now - message.timestamp.before.max.ms,
   now + message.timestamp.after.max.ms]; in Kafka 3.x either bound left at
   its default (Long.MAX_VALUE) falls back to the deprecated
   ``message.timestamp.difference.max.ms``;
3. otherwise a batch whose producer set the LogAppendTime attribute is
   refused (only the broker stamps LogAppendTime).

The answer is INVALID_TIMESTAMP when any record failed rule 2 or 3, else
INVALID_RECORD, with a top-level ``error_message``.

Reading the records of a compressed batch decompresses them, to at most
``max_decompressed_size`` bytes (64 times max.message.bytes; why:
protocol/compression.py). A batch that inflates past that is refused whole
with MESSAGE_TOO_LARGE, Kafka's answer to a batch larger than the topic
takes once converted (a Java producer splits the batch and sends it again);
records that cannot be decompressed or whose sizes do not add up to the
section get INVALID_RECORD, Kafka's answer since KIP-467 to a record it
cannot read (``InvalidRecordException``).

Fast path: native checks over the records section (``has_null_key``,
``timestamps_within``) say whether any record fails; only a failing batch
is walked record by record here to name the culprits. The records are
read, so the caller checks the batch CRC first (``reads_records``).

Pure functions over immutable values; safe from any thread.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Buffer

from kcore._native import records as native_records
from kcore._native.batch_layout import BATCH_HEADER_SIZE
from kcore._native.records import BatchHeader, RecordSpan
from kcore.log.cleaner_records import records_section
from kcore.protocol.compression import (
    KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    DecompressedSizeError,
    max_decompressed_size,
)
from kcore.protocol.constants import INT64_MAX
from kcore.protocol.errors import ErrorCode

NO_TIMESTAMP = -1
# Kafka's top-level message lists at most this many record errors.
MESSAGE_RECORD_ERRORS = 3
# record_errors names at most this many records. Kafka names every one, but
# a batch may hold millions of small records (64 MiB of 7-byte ones once
# decompressed: 9.6M) and each costs ~100 bytes of answer; a client fails
# the unnamed records of a refused batch too (librdkafka:
# _INVALID_DIFFERENT_RECORD).
MAX_RECORD_ERRORS = 1000
# Records walked at a time when naming the failing ones: their spans are
# ~100 bytes each, and 9.6M of them at once were ~1 GB.
WALK_WINDOW = 65536


class RecordValidationError(Exception):
    """The batch was refused because of some of its records:
    ``record_errors`` is [(batch index, message)] in index order."""

    def __init__(self, error_code: int, message: str, record_errors: list[tuple[int, str]]):
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.record_errors = record_errors


@dataclass(frozen=True)
class RecordPolicy:
    """The topic configs the per-record rules read (module docstring)."""

    keys_required: bool
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    max_decompressed_size: int = max_decompressed_size(KAFKA_DEFAULT_MAX_MESSAGE_BYTES)

    @classmethod
    def from_configs(cls, configs: Mapping[str, Any]) -> RecordPolicy:
        difference = configs.get("message.timestamp.difference.max.ms", INT64_MAX)
        before = configs.get("message.timestamp.before.max.ms", INT64_MAX)
        after = configs.get("message.timestamp.after.max.ms", INT64_MAX)
        policies = str(configs.get("cleanup.policy", "delete")).split(",")
        return cls(keys_required="compact" in policies,
                   log_append_time=configs.get("message.timestamp.type") == "LogAppendTime",
                   before_max_ms=difference if before == INT64_MAX else before,
                   after_max_ms=difference if after == INT64_MAX else after,
                   max_decompressed_size=max_decompressed_size(
                       configs.get("max.message.bytes", KAFKA_DEFAULT_MAX_MESSAGE_BYTES)))

    @property
    def bounds_timestamps(self) -> bool:
        return not self.log_append_time and (self.before_max_ms < INT64_MAX
                                             or self.after_max_ms < INT64_MAX)

    @property
    def reads_records(self) -> bool:
        """Whether checking a batch decodes its records (the CRC comes first)."""
        return self.keys_required or self.bounds_timestamps

    def timestamp_range(self, now: int) -> tuple[int, int]:
        """[earliest, latest] accepted at ``now``, clamped to int64."""
        return max(now - self.before_max_ms, -INT64_MAX - 1), min(now + self.after_max_ms, INT64_MAX)


def validate_records(batch: Buffer, header: BatchHeader, policy: RecordPolicy, now: int,
                     topic_partition: str) -> None:
    """Raise RecordValidationError when a record of the whole batch
    ``batch`` (its ``header`` already validated) breaks a rule."""
    producer_log_append_time = header.timestamp_type == 1
    if not (policy.reads_records or producer_log_append_time):
        return
    try:
        section = _records_section(batch, header, policy.max_decompressed_size)
    except DecompressedSizeError as exc:
        raise RecordValidationError(
            ErrorCode.MESSAGE_TOO_LARGE, f"the batch's {header.records_count} records inflate "
            f"past {exc.max_size} bytes, more than one batch may hold", []) from None
    except ValueError:
        raise RecordValidationError(ErrorCode.INVALID_RECORD,
                                    "the batch's records cannot be decompressed", []) from None
    earliest, latest = policy.timestamp_range(now)
    if not producer_log_append_time \
            and not (policy.keys_required and native_records.has_null_key(section)) \
            and not (policy.bounds_timestamps and not native_records.timestamps_within(
                section, header.base_timestamp, earliest, latest)):
        return
    _raise_record_errors(section, header, policy, earliest, latest, topic_partition)


def _records_section(batch: Buffer, header: BatchHeader, max_size: int) -> Buffer:
    """The decoded records; uncompressed ones are read in place, not copied."""
    if header.compression_codec == 0:
        return memoryview(batch)[BATCH_HEADER_SIZE:]
    return records_section(batch, header.attributes, max_size)


def _raise_record_errors(section: Buffer, header: BatchHeader, policy: RecordPolicy,
                         earliest: int, latest: int, topic_partition: str) -> None:
    errors: list[tuple[int, str]] = []
    failed = total = 0
    bad_timestamp = False
    for index, span in enumerate(_spans(section)):
        total += 1
        message = None
        timestamp = _wrap_int64(header.base_timestamp + span.timestamp_delta)
        if policy.keys_required and span.key_length < 0:
            message = f"Compacted topic {topic_partition} cannot accept a record without a key"
        elif not policy.log_append_time and timestamp != NO_TIMESTAMP:
            if not earliest <= timestamp <= latest:
                bad_timestamp = True
                message = (f"Timestamp {timestamp} of the record at offset delta "
                           f"{span.offset_delta} is out of range: the timestamp should be "
                           f"within [{earliest}, {latest}]")
        elif header.timestamp_type == 1:
            bad_timestamp = True
            message = ("Invalid timestamp type LogAppendTime: only the broker stamps "
                       "LogAppendTime, producers send CreateTime")
        if message is not None:
            failed += 1
            if len(errors) < MAX_RECORD_ERRORS:
                errors.append((index, message))
    if not errors:
        return
    if bad_timestamp:
        raise RecordValidationError(ErrorCode.INVALID_TIMESTAMP,
                                    "One or more records have been rejected due to invalid "
                                    "timestamp", errors)
    shown = ", ".join(f"{index}: {message}" for index, message in errors[:MESSAGE_RECORD_ERRORS])
    raise RecordValidationError(ErrorCode.INVALID_RECORD,
                                f"{failed} of the batch's {total} records were rejected "
                                f"(the first {min(failed, MESSAGE_RECORD_ERRORS)}: {shown})",
                                errors)


def _spans(section: Buffer) -> Iterator[RecordSpan]:
    """The records' spans, walked WALK_WINDOW at a time."""
    position = 0
    while True:
        try:
            window = native_records.walk_records(section, position, WALK_WINDOW)
        except ValueError as exc:
            raise RecordValidationError(ErrorCode.INVALID_RECORD, str(exc), []) from None
        if not window:
            return
        yield from window
        position = window[-1].end


def _wrap_int64(value: int) -> int:
    """Java long arithmetic: baseTimestamp + timestampDelta wraps."""
    return (value + 2**63) % 2**64 - 2**63

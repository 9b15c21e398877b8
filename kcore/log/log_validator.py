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
   refused (only the broker stamps LogAppendTime);
4. with schema validation on (Confluent Server's
   ``confluent.value.schema.validation``, Redpanda's
   ``redpanda.value.schema.id.validation``, and the same for keys), a
   record's value (key) must start with Confluent's wire format (magic
   byte 0, a big-endian int32 schema id) and the id must be one the
   schema registry allows for the topic (kcore/schema_registry/
   validation.py gives the checks); a null value or key passes.

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
``timestamps_within``, ``record_schema_ids``: the distinct ids a batch
carries, usually one) say whether any record fails; only a failing batch
is walked record by record here to name the culprits. Topics without these
rules read no record at all. The records are
read, so the caller checks the batch CRC first (``reads_records``).

Pure functions over immutable values; safe from any thread.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

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
# record_schema_ids: a null key or value (it carries no schema, and passes).
NULL_SCHEMA_ID = -2
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


class SchemaIdCheck(Protocol):
    """Which schema ids a topic's keys or values may carry (rule 4)."""

    @property
    def subject(self) -> str:
        """Where the ids must be registered, as a refusal names it."""

    def allows(self, schema_id: int) -> bool: ...


class NoSchemaIds:
    """Validation on, and no registry to ask: no id is registered."""

    subject = "a subject of a schema registry this broker has"

    def allows(self, schema_id: int) -> bool:
        return False


@dataclass(frozen=True)
class RecordPolicy:
    """The topic configs the per-record rules read (module docstring)."""

    keys_required: bool
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    max_decompressed_size: int = max_decompressed_size(KAFKA_DEFAULT_MAX_MESSAGE_BYTES)
    validates_key_schemas: bool = False
    validates_value_schemas: bool = False
    # The checks of rule 4, attached by the partition when validation is on.
    key_schemas: SchemaIdCheck | None = field(default=None, compare=False)
    value_schemas: SchemaIdCheck | None = field(default=None, compare=False)

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
                   validates_key_schemas=bool(configs.get("confluent.key.schema.validation")
                                              or configs.get("redpanda.key.schema.id.validation")),
                   validates_value_schemas=bool(configs.get("confluent.value.schema.validation")
                                                or configs.get("redpanda.value.schema.id.validation")),
                   max_decompressed_size=max_decompressed_size(
                       configs.get("max.message.bytes", KAFKA_DEFAULT_MAX_MESSAGE_BYTES)))

    def __post_init__(self) -> None:
        # Read on every produce of the topic: worked out once (the policy is
        # kept while the topic's configs are, replication/partition.py).
        checks: list[tuple[SchemaIdCheck, bool]] = []
        if self.validates_key_schemas:
            checks.append((self.key_schemas or NoSchemaIds(), True))
        if self.validates_value_schemas:
            checks.append((self.value_schemas or NoSchemaIds(), False))
        object.__setattr__(self, "_checks", tuple(checks))
        object.__setattr__(self, "reads_records", self.keys_required or self.bounds_timestamps or bool(checks))

    @property
    def validates_schemas(self) -> bool:
        return self.validates_key_schemas or self.validates_value_schemas

    def _schema_checks(self) -> tuple[tuple[SchemaIdCheck, bool], ...]:
        """(check, of keys) for each validated side; refusing all without a check."""
        return self._checks  # type: ignore[attr-defined]

    @property
    def bounds_timestamps(self) -> bool:
        return not self.log_append_time and (self.before_max_ms < INT64_MAX
                                             or self.after_max_ms < INT64_MAX)

    # Whether checking a batch decodes its records (the CRC comes first).
    reads_records: bool = field(init=False, compare=False)

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
    earliest, latest = policy.timestamp_range(now) if policy.bounds_timestamps else (-INT64_MAX - 1, INT64_MAX)
    if not producer_log_append_time \
            and not (policy.keys_required and native_records.has_null_key(section)) \
            and not (policy.bounds_timestamps and not native_records.timestamps_within(
                section, header.base_timestamp, earliest, latest)) \
            and (not policy.validates_schemas or _schemas_allowed(section, policy)):
        return
    _raise_record_errors(section, header, policy, earliest, latest, topic_partition)


def _schemas_allowed(section: Buffer, policy: RecordPolicy) -> bool:
    for check, keys in policy._schema_checks():
        try:
            ids = native_records.record_schema_ids(section, keys)
        except ValueError:
            return False
        if len(ids) == 1:  # the usual batch: one producer, one schema
            if not _allowed(ids[0], check):
                return False
        elif not all(_allowed(schema_id, check) for schema_id in ids):
            return False
    return True


def _allowed(schema_id: int, check: SchemaIdCheck) -> bool:
    return schema_id == NULL_SCHEMA_ID or (schema_id >= 0 and check.allows(schema_id))


def _schema_error(schema_id: int, check: SchemaIdCheck, keys: bool) -> str | None:
    """Why a record's key (value) carrying ``schema_id`` breaks rule 4, or None."""
    part = "key" if keys else "value"
    if _allowed(schema_id, check):
        return None
    if schema_id < 0:
        return (f"The record's {part} does not carry a schema id: it must start with the magic byte 0 "
                f"and a 4-byte schema id (Confluent's wire format)")
    return f"The record's {part} carries schema id {schema_id}, which is not registered under {check.subject}"


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
    data = memoryview(section).cast("B")
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
        if message is None:
            message = next((found for check, keys in policy._schema_checks()
                            if (found := _schema_error(_span_schema_id(data, span, keys), check, keys))
                            is not None), None)
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


def _span_schema_id(data: memoryview, span: RecordSpan, keys: bool) -> int:
    """The schema id the record's key (value) carries, as ``record_schema_ids``
    reads it, for naming records without a list of every id of the batch."""
    if keys:
        position, length = span.key_position, span.key_length
    else:
        length = span.value_length
        _, position = native_records.decode_varint(data, span.key_position + max(span.key_length, 0))
    if length < 0:
        return NULL_SCHEMA_ID
    if length < 5 or data[position] != 0:
        return -1
    return int.from_bytes(data[position + 1:position + 5], "big")


def _wrap_int64(value: int) -> int:
    """Java long arithmetic: baseTimestamp + timestampDelta wraps."""
    return (value + 2**63) % 2**64 - 2**63

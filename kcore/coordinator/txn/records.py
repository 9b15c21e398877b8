"""Records of the ``__transaction_state`` topic (compacted): one key per
transactional id, the latest value wins, a null value deletes.

Key::

    version i16 (0) | transactional_id string

Value (written: version 0; version 1, flexible, is read too)::

    version i16 | producer_id i64 | producer_epoch i16
    | transaction_timeout_ms i32 | transaction_status i8 (TransactionState id)
    | transaction_partitions [topic string | partition_ids [i32]] (nullable)
    | transaction_last_update_timestamp_ms i64
    | transaction_start_timestamp_ms i64

Partition of a transactional id: abs(Java String.hashCode(id)) % partitions,
as for groups. Source: apache/kafka core/src/main/resources/common/message/
TransactionLogKey.json and TransactionLogValue.json.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kcore.coordinator.group.records import partition_for
from kcore.protocol import decode_struct, encode_struct
from kcore.protocol.exceptions import ProtocolDecodeError
from kcore.protocol.schema import Field, Struct

KEY_VERSION = 0
VALUE_VERSION = 0
MAX_VALUE_VERSION = 1

_VERSION = struct.Struct(">h")

TRANSACTION_LOG_KEY = Struct("TransactionLogKey", [
    Field("transactional_id", "string", "0+"),
])

TRANSACTION_LOG_VALUE = Struct("TransactionLogValue", [
    Field("producer_id", "int64", "0+"),
    Field("producer_epoch", "int16", "0+"),
    Field("transaction_timeout_ms", "int32", "0+"),
    Field("transaction_status", "int8", "0+"),
    Field("transaction_partitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
        Field("topic", "string", "0+"),
        Field("partition_ids", "[]int32", "0+"),
    ]),
    Field("transaction_last_update_timestamp_ms", "int64", "0+"),
    Field("transaction_start_timestamp_ms", "int64", "0+"),
], flexible="1+")

__all__ = ["TransactionValue", "decode_key", "decode_value", "encode_key", "encode_value",
           "partition_for"]


class RecordFormatError(ValueError):
    """A __transaction_state record this broker cannot read."""


@dataclass(frozen=True)
class TransactionValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state_id: int
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int


def encode_key(transactional_id: str) -> bytes:
    return _VERSION.pack(KEY_VERSION) + encode_struct(
        TRANSACTION_LOG_KEY, KEY_VERSION, {"transactional_id": transactional_id})


def decode_key(data: bytes) -> str:
    version = _read_version(data)
    if version != KEY_VERSION:
        raise RecordFormatError(f"unknown transaction log key version {version}")
    try:
        return decode_struct(TRANSACTION_LOG_KEY, version, data[2:]).transactional_id
    except ProtocolDecodeError as exc:
        raise RecordFormatError(f"bad transaction log key: {exc}") from None


def encode_value(value: TransactionValue) -> bytes:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(value.partitions):
        topics.setdefault(topic, []).append(partition)
    return _VERSION.pack(VALUE_VERSION) + encode_struct(TRANSACTION_LOG_VALUE, VALUE_VERSION, {
        "producer_id": value.producer_id, "producer_epoch": value.producer_epoch,
        "transaction_timeout_ms": value.timeout_ms, "transaction_status": value.state_id,
        "transaction_partitions": [{"topic": t, "partition_ids": p} for t, p in topics.items()],
        "transaction_last_update_timestamp_ms": value.last_update_ms,
        "transaction_start_timestamp_ms": value.start_ms})


def decode_value(data: bytes) -> TransactionValue:
    version = _read_version(data)
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise RecordFormatError(f"unknown transaction log value version {version}")
    try:
        value = decode_struct(TRANSACTION_LOG_VALUE, version, data[2:])
    except ProtocolDecodeError as exc:
        raise RecordFormatError(f"bad transaction log value: {exc}") from None
    partitions = frozenset((t.topic, p) for t in value.transaction_partitions or ()
                           for p in t.partition_ids)
    return TransactionValue(value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                            value.transaction_status, partitions,
                            value.transaction_last_update_timestamp_ms,
                            value.transaction_start_timestamp_ms)


def _read_version(data: bytes) -> int:
    if len(data) < 2:
        raise RecordFormatError("record shorter than its version")
    return _VERSION.unpack_from(data)[0]

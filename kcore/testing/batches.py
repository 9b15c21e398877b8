"""Builders of v2 RecordBatches for tests and benchmarks (valid ones, and
deliberately bad ones through the overrides). Layout:
kcore/_native/batch_layout.py."""
from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import Any

from kcore._native.twin.records import crc32c, encode_varint

_BASE_AND_LENGTH = struct.Struct(">qi")
_AFTER_CRC = struct.Struct(">hiqqqhii")
_EPOCH_MAGIC_CRC = struct.Struct(">ibI")


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                  value: bytes | None, headers: Sequence[tuple[bytes, bytes | None]] = ()) -> bytes:
    """One v2 record (without compression), length prefix included."""
    body = bytearray(b"\x00")
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    for field in (key, value):
        if field is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(field)) + field
    body += encode_varint(len(headers))
    for header_key, header_value in headers:
        body += encode_varint(len(header_key)) + header_key
        body += encode_varint(-1) if header_value is None else encode_varint(len(header_value)) + header_value
    return encode_varint(len(body)) + bytes(body)


def build_batch(values: Sequence[bytes | None], *, keys: Sequence[bytes | None] | None = None,
                base_offset: int = 0, partition_leader_epoch: int = 0,
                base_timestamp: int = 0, timestamp_deltas: Sequence[int] | None = None,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                attributes: int = 0, last_offset_delta: int | None = None,
                records_count: int | None = None) -> bytearray:
    """A valid uncompressed v2 batch. Override last_offset_delta /
    records_count to build deliberately bad batches."""
    keys = keys if keys is not None else [None] * len(values)
    deltas = timestamp_deltas if timestamp_deltas is not None else [0] * len(values)
    records = b"".join(encode_record(i, deltas[i], keys[i], values[i]) for i in range(len(values)))
    count = len(values) if records_count is None else records_count
    delta = len(values) - 1 if last_offset_delta is None else last_offset_delta
    max_timestamp = base_timestamp + max(deltas, default=0)
    body = _AFTER_CRC.pack(attributes, delta, base_timestamp, max_timestamp,
                           producer_id, producer_epoch, base_sequence, count) + records
    # batchLength counts the epoch, magic and CRC (9 bytes) and the body.
    batch = bytearray(_BASE_AND_LENGTH.pack(base_offset, 9 + len(body)))
    batch += _EPOCH_MAGIC_CRC.pack(partition_leader_epoch, 2, crc32c(body)) + body
    return batch


def random_batch(value_bytes: int, records_count: int = 1, **kwargs: Any) -> bytearray:
    """A batch of records_count random values totalling about value_bytes."""
    each = max(0, value_bytes // max(records_count, 1))
    return build_batch([os.urandom(each) for _ in range(records_count)], **kwargs)


def make_batch(records: int = 1, value_bytes: int = 10, timestamp: int = 1_000,
               **kwargs: Any) -> bytearray:
    """A valid uncompressed v2 batch of ``records`` values of ``value_bytes``."""
    deltas = kwargs.pop("timestamp_deltas", [0] * records)
    return build_batch([bytes([65 + i % 26]) * value_bytes for i in range(records)],
                       base_timestamp=timestamp, timestamp_deltas=deltas, **kwargs)

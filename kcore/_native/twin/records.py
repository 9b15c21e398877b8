"""Twin of native/records.pyx: CRC-32C, varints, batch headers and checks,
in-place patching, and the record walk. Layout: kcore/_native/batch_layout.py."""
from __future__ import annotations

import struct

from typing_extensions import Buffer

from kcore._native.batch_layout import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CURRENT_MAGIC,
    DELETE_HORIZON_FLAG_MASK,
    HEADER,
    HEADER_FIELDS,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)

_CRC_POLY = 0x82F63B78
_MAX_U64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


class CorruptBatchError(ValueError):
    """A RecordBatch failed a check. ``reason`` is 'size', 'magic', 'crc' or
    'count'; ``position`` is the byte position of the batch in the buffer."""

    def __init__(self, reason: str, position: int = 0, message: str | None = None):
        self.reason = reason
        self.position = position
        super().__init__(message or f"corrupt record batch at position {position}: {reason}")


def crc32c(data: Buffer, crc: int = 0) -> int:
    table = _CRC_TABLE
    reg = crc ^ 0xFFFFFFFF
    for byte in memoryview(data).cast("B"):
        reg = table[(reg ^ byte) & 0xFF] ^ (reg >> 8)
    return reg ^ 0xFFFFFFFF


def as_int64(n: int) -> int:
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError(f"{n} does not fit in a signed 64-bit integer")
    return n


def _as_uint64(n: int) -> int:
    if n < 0:
        raise ValueError(f"{n} is negative")
    if n > _MAX_U64:
        raise ValueError(f"{n} does not fit in an unsigned 64-bit integer")
    return n


def zigzag_encode(n: int) -> int:
    n = as_int64(n)
    return ((n << 1) ^ (n >> 63)) & _MAX_U64


def zigzag_decode(n: int) -> int:
    n = _as_uint64(n)
    return (n >> 1) ^ -(n & 1)


def encode_uvarint(n: int) -> bytes:
    n = _as_uint64(n)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    return encode_uvarint(zigzag_encode(n))


def decode_uvarint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    data = memoryview(buf).cast("B")
    if pos < 0:
        raise ValueError(f"position {pos} is negative")
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise ValueError("overlong varint: more than 64 bits")
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("overlong varint: more than 10 bytes")


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    value, pos = decode_uvarint(buf, pos)
    return (value >> 1) ^ -(value & 1), pos


# ------------------------------------------------------------------ headers

_HEADER_FIELDS = ("position", *HEADER_FIELDS)


def _same_fields(a: object, b: object, names: tuple[str, ...]) -> bool:
    if not all(hasattr(b, name) for name in names):
        return NotImplemented
    return all(getattr(a, name) == getattr(b, name) for name in names)


def _repr(value: object, names: tuple[str, ...]) -> str:
    fields = ", ".join(f"{name}={getattr(value, name)!r}" for name in names)
    return f"{type(value).__name__}({fields})"


class BatchHeader:
    """Twin of the native BatchHeader."""

    __slots__ = _HEADER_FIELDS
    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, position: int, fields: tuple[int, ...]):
        self.position = position
        for name, value in zip(HEADER_FIELDS, fields, strict=True):
            setattr(self, name, value)

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression_codec(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else None

    def __eq__(self, other: object) -> bool:
        return _same_fields(self, other, _HEADER_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _repr(self, _HEADER_FIELDS)


def _header_at(data: memoryview, position: int) -> BatchHeader:
    return BatchHeader(position, HEADER.unpack_from(data, position))


def parse_batch_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    data = memoryview(buf).cast("B")
    if pos < 0 or len(data) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatchError("size", pos)
    return _header_at(data, pos)


def _batch_size(data: memoryview, position: int) -> int:
    """Size of the batch at position, or -1 when it is torn or too short."""
    if len(data) - position < BATCH_HEADER_SIZE:
        return -1
    batch_length = struct.unpack_from(">i", data, position + LENGTH_OFFSET)[0]
    size = batch_length + LOG_OVERHEAD
    if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or size > len(data) - position:
        return -1
    return int(size)


def check_batch(data: memoryview, position: int, check_count: bool,
                check_crc: bool = True) -> tuple[str | None, int]:
    """(None, size) when the batch at position is valid, else (reason, 0)."""
    size = _batch_size(data, position)
    if size < 0:
        return "size", 0
    header = _header_at(data, position)
    if header.magic != CURRENT_MAGIC:
        return "magic", 0
    if check_crc and crc32c(data[position + ATTRIBUTES_OFFSET:position + size]) != header.crc:
        return "crc", 0
    last_offset_delta, records_count = header.last_offset_delta, header.records_count
    if check_count:
        if records_count < 1 or last_offset_delta != records_count - 1:
            return "count", 0
    elif records_count < 0 or last_offset_delta < 0:
        return "count", 0
    return None, size


def validate_batches(buf: Buffer, check_count: bool = True,
                     check_crc: bool = True) -> list[BatchHeader]:
    data = memoryview(buf).cast("B")
    out = []
    position = 0
    while position < len(data):
        reason, size = check_batch(data, position, check_count, check_crc)
        if reason is not None:
            raise CorruptBatchError(reason, position)
        out.append(_header_at(data, position))
        position += size
    return out


def batch_infos(buf: Buffer) -> list[BatchHeader]:
    data = memoryview(buf).cast("B")
    return [_header_at(data, position) for position in check_sizes(data)]


def check_sizes(data: memoryview) -> list[int]:
    """Positions of the batches, once their sizes tile ``data``."""
    positions = []
    position = 0
    while position < len(data):
        size = _batch_size(data, position)
        if size < 0:
            raise CorruptBatchError("size", position)
        positions.append(position)
        position += size
    return positions


def patch_batches(buf: Buffer, base_offset: int, partition_leader_epoch: int) -> int:
    data = memoryview(buf).cast("B")
    if data.readonly:
        raise BufferError("patch_batches needs a writable buffer")
    offset = base_offset
    for position in check_sizes(data):
        struct.pack_into(">q", data, position, offset)
        struct.pack_into(">i", data, position + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
        offset += struct.unpack_from(">i", data, position + LAST_OFFSET_DELTA_OFFSET)[0] + 1
    return offset


def stamp_log_append_time(buf: Buffer, timestamp: int) -> int:
    data = memoryview(buf).cast("B")
    if data.readonly:
        raise BufferError("stamp_log_append_time needs a writable buffer")
    positions = check_sizes(data)
    for position in positions:
        size = struct.unpack_from(">i", data, position + LENGTH_OFFSET)[0] + LOG_OVERHEAD
        attributes = struct.unpack_from(">H", data, position + ATTRIBUTES_OFFSET)[0] | TIMESTAMP_TYPE_MASK
        struct.pack_into(">H", data, position + ATTRIBUTES_OFFSET, attributes)
        struct.pack_into(">q", data, position + MAX_TIMESTAMP_OFFSET, timestamp)
        struct.pack_into(">I", data, position + CRC_OFFSET,
                         crc32c(data[position + ATTRIBUTES_OFFSET:position + size]))
    return len(positions)


# ------------------------------------------------------------------ records

_SPAN_FIELDS = ("position", "end", "attributes", "timestamp_delta", "offset_delta_position",
                "offset_delta", "key_position", "key_length", "value_length")


class RecordSpan:
    """Twin of the native RecordSpan."""

    __slots__ = _SPAN_FIELDS
    position: int
    end: int
    attributes: int
    timestamp_delta: int
    offset_delta_position: int
    offset_delta: int
    key_position: int
    key_length: int
    value_length: int

    def __eq__(self, other: object) -> bool:
        return _same_fields(self, other, _SPAN_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _repr(self, _SPAN_FIELDS)


def _nullable_length(data: memoryview, position: int, end: int) -> tuple[int, int]:
    length, position = decode_varint(data[:end], position)
    if length < -1 or length > end - position:
        raise ValueError(f"length {length} at {position} runs past the record")
    return length, position


def _record_at(data: memoryview, position: int) -> RecordSpan:
    span = RecordSpan()
    span.position = position
    length, position = decode_varint(data, position)
    if length < 1 or length > len(data) - position:
        raise ValueError(f"record length {length} runs past the section")
    span.end = end = position + length
    span.attributes = data[position]
    span.timestamp_delta, position = decode_varint(data[:end], position + 1)
    span.offset_delta_position = position
    span.offset_delta, position = decode_varint(data[:end], position)
    span.key_length, position = _nullable_length(data, position, end)
    span.key_position = position
    span.value_length, _ = _nullable_length(data, position + max(span.key_length, 0), end)
    return span


def walk_records(section: Buffer, position: int = 0, max_records: int = -1) -> list[RecordSpan]:
    data = memoryview(section).cast("B")
    if not 0 <= position <= len(data):
        raise ValueError(f"position {position} is outside the {len(data)}-byte records section")
    out: list[RecordSpan] = []
    while position < len(data) and len(out) != max_records:
        try:
            span = _record_at(data, position)
        except (ValueError, IndexError):
            raise ValueError(f"malformed record at position {position} of a "
                             f"{len(data)}-byte records section") from None
        out.append(span)
        position = span.end
    return out


def count_records(section: Buffer) -> int:
    return len(walk_records(section))


def has_null_key(section: Buffer) -> bool:
    try:
        return any(span.key_length < 0 for span in walk_records(section))
    except ValueError:
        return True


def timestamps_within(section: Buffer, base_timestamp: int, earliest: int, latest: int) -> bool:
    try:
        spans = walk_records(section)
    except ValueError:
        return False
    for span in spans:
        # int64 addition wraps as in Kafka's Java (baseTimestamp + timestampDelta).
        timestamp = (base_timestamp + span.timestamp_delta - _INT64_MIN) % (1 << 64) + _INT64_MIN
        if timestamp != -1 and not earliest <= timestamp <= latest:
            return False
    return True


def _wire_schema_id(data: memoryview, position: int, length: int) -> int:
    if length < 0:
        return -2
    if length < 5 or data[position] != 0:
        return -1
    return int.from_bytes(data[position + 1:position + 5], "big")


def record_schema_ids(section: Buffer, keys: bool, distinct: bool = True) -> list[int]:
    data = memoryview(section).cast("B")
    out: list[int] = []
    for span in walk_records(section):
        if keys:
            found = _wire_schema_id(data, span.key_position, span.key_length)
        else:
            _, value_position = _nullable_length(data, span.key_position + max(span.key_length, 0), span.end)
            found = _wire_schema_id(data, value_position, span.value_length)
        if not distinct or not out or out[-1] != found:
            out.append(found)
    return out

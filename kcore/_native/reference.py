"""Pure-Python twins of the native kernels: the test oracle and the baseline
of the micro-benchmarks. Same names, arguments, results and exceptions as the
compiled modules (``records``, ``index``, ``segment``, ``append``,
``journal``); slow by design, never used on a hot path.

RecordBatch v2 layout (KIP-98), big-endian::

     0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32
    16 magic i8 = 2 | 17 crc u32 (CRC-32C over attributes..end)
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16
    53 baseSequence i32 | 57 recordsCount i32 | 61 records

Record: length varint, attributes i8, timestampDelta varlong, offsetDelta
varint, keyLength varint (-1 null), key, valueLength varint, value,
headerCount varint, headers (keyLength, key, valueLength, value).

Offset index entry (Kafka ``OffsetIndex``): i32 relative offset, i32
position. Time index entry (``TimeIndex``): i64 timestamp, i32 relative
offset.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Sequence

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_AND_LENGTH = struct.Struct(">qi")
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


def crc32c(data, crc: int = 0) -> int:
    table = _CRC_TABLE
    reg = crc ^ 0xFFFFFFFF
    for byte in memoryview(data).cast("B"):
        reg = table[(reg ^ byte) & 0xFF] ^ (reg >> 8)
    return reg ^ 0xFFFFFFFF


def _as_int64(n: int) -> int:
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
    n = _as_int64(n)
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


def decode_uvarint(buf, pos: int = 0) -> tuple[int, int]:
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


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    value, pos = decode_uvarint(buf, pos)
    return (value >> 1) ^ -(value & 1), pos


def parse_batch_header(buf, pos: int = 0) -> tuple:
    data = memoryview(buf).cast("B")
    if pos < 0 or len(data) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatchError("size", pos)
    return _HEADER.unpack_from(data, pos)


def _batch_size(data: memoryview, position: int) -> int:
    """Size of the batch at position, or -1 when it is torn or too short."""
    if len(data) - position < BATCH_HEADER_SIZE:
        return -1
    batch_length = struct.unpack_from(">i", data, position + 8)[0]
    size = batch_length + LOG_OVERHEAD
    if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or size > len(data) - position:
        return -1
    return size


def check_batch(data: memoryview, position: int, check_count: bool,
                check_crc: bool = True) -> tuple[str | None, int]:
    """(None, size) when the batch at position is valid, else (reason, 0)."""
    size = _batch_size(data, position)
    if size < 0:
        return "size", 0
    header = _HEADER.unpack_from(data, position)
    if header[3] != 2:
        return "magic", 0
    if check_crc and crc32c(data[position + 21:position + size]) != header[4]:
        return "crc", 0
    last_offset_delta, records_count = header[6], header[12]
    if check_count:
        if records_count < 1 or last_offset_delta != records_count - 1:
            return "count", 0
    elif records_count < 0 or last_offset_delta < 0:
        return "count", 0
    return None, size


def validate_batches(buf, check_count: bool = True, check_crc: bool = True) -> list[tuple]:
    data = memoryview(buf).cast("B")
    out = []
    position = 0
    while position < len(data):
        reason, size = check_batch(data, position, check_count, check_crc)
        if reason is not None:
            raise CorruptBatchError(reason, position)
        h = _HEADER.unpack_from(data, position)
        out.append((position, size, h[6], h[12], h[5], h[7], h[8], h[9], h[10], h[11]))
        position += size
    return out


def batch_infos(buf) -> list[tuple]:
    data = memoryview(buf).cast("B")
    out = []
    for position in _check_sizes(data):
        h = _HEADER.unpack_from(data, position)
        out.append((position, h[1] + LOG_OVERHEAD, h[6], h[12], h[5], h[7], h[8], h[9], h[10], h[11]))
    return out


def _check_sizes(data: memoryview) -> list[int]:
    positions = []
    position = 0
    while position < len(data):
        size = _batch_size(data, position)
        if size < 0:
            raise CorruptBatchError("size", position)
        positions.append(position)
        position += size
    return positions


def patch_batches(buf, base_offset: int, partition_leader_epoch: int) -> int:
    data = memoryview(buf).cast("B")
    if data.readonly:
        raise BufferError("patch_batches needs a writable buffer")
    offset = base_offset
    for position in _check_sizes(data):
        struct.pack_into(">q", data, position, offset)
        struct.pack_into(">i", data, position + 12, partition_leader_epoch)
        offset += struct.unpack_from(">i", data, position + 23)[0] + 1
    return offset


def stamp_log_append_time(buf, timestamp: int) -> int:
    data = memoryview(buf).cast("B")
    if data.readonly:
        raise BufferError("stamp_log_append_time needs a writable buffer")
    positions = _check_sizes(data)
    for position in positions:
        size = struct.unpack_from(">i", data, position + 8)[0] + LOG_OVERHEAD
        attributes = struct.unpack_from(">H", data, position + 21)[0] | 0x08
        struct.pack_into(">H", data, position + 21, attributes)
        struct.pack_into(">q", data, position + 35, timestamp)
        struct.pack_into(">I", data, position + 17, crc32c(data[position + 21:position + size]))
    return len(positions)


# ---------------------------------------------------------------- test helper

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
    """A valid uncompressed v2 batch (tests and benchmarks only). Override
    last_offset_delta / records_count to build deliberately bad batches."""
    keys = keys if keys is not None else [None] * len(values)
    deltas = timestamp_deltas if timestamp_deltas is not None else [0] * len(values)
    records = b"".join(encode_record(i, deltas[i], keys[i], values[i]) for i in range(len(values)))
    count = len(values) if records_count is None else records_count
    delta = len(values) - 1 if last_offset_delta is None else last_offset_delta
    max_timestamp = base_timestamp + max(deltas, default=0)
    body = struct.pack(">hiqqqhii", attributes, delta, base_timestamp, max_timestamp,
                       producer_id, producer_epoch, base_sequence, count) + records
    batch = bytearray(_BASE_AND_LENGTH.pack(base_offset, 9 + len(body)))
    batch += struct.pack(">ibI", partition_leader_epoch, 2, crc32c(body)) + body
    return batch


def random_batch(value_bytes: int, records_count: int = 1, **kwargs) -> bytearray:
    """A batch of records_count random values totalling about value_bytes."""
    each = max(0, value_bytes // max(records_count, 1))
    return build_batch([os.urandom(each) for _ in range(records_count)], **kwargs)


# ------------------------------------------------------------------- indexes

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12


def _entries(buf, entries: int, fmt: str) -> list[tuple[int, int]]:
    size = struct.calcsize(fmt)
    data = memoryview(buf).cast("B")
    if entries < 0 or entries > len(data) // size:
        raise ValueError(f"{entries} entries of {size} bytes do not fit in {len(data)} bytes")
    return [struct.unpack_from(fmt, data, slot * size) for slot in range(entries)]


def _largest_at_or_below(buf, entries: int, fmt: str, field: int, target: int) -> int:
    """Binary search: slot of the largest entry whose ``field`` is <= target, or -1."""
    size = struct.calcsize(fmt)
    data = memoryview(buf).cast("B")
    if entries < 0 or entries > len(data) // size:
        raise ValueError(f"{entries} entries of {size} bytes do not fit in {len(data)} bytes")
    lo, hi = 0, entries - 1
    if entries == 0 or struct.unpack_from(fmt, data, 0)[field] > target:
        return -1
    while lo < hi:
        mid = hi - (hi - lo) // 2
        if struct.unpack_from(fmt, data, mid * size)[field] <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


def offset_index_lookup(buf, entries: int, target_relative_offset: int) -> int:
    return _largest_at_or_below(buf, entries, ">ii", 0, target_relative_offset)


def time_index_lookup(buf, entries: int, target_timestamp: int) -> int:
    return _largest_at_or_below(buf, entries, ">qi", 0, target_timestamp)


def offset_index_position_lookup(buf, entries: int, target_position: int) -> int:
    return _largest_at_or_below(buf, entries, ">ii", 1, target_position)


def offset_index_entry(buf, slot: int) -> tuple[int, int]:
    if slot < 0:
        raise IndexError(slot)
    return _entries(buf, slot + 1, ">ii")[slot]


def time_index_entry(buf, slot: int) -> tuple[int, int]:
    if slot < 0:
        raise IndexError(slot)
    return _entries(buf, slot + 1, ">qi")[slot]


def offset_index_valid_entries(buf, entries: int) -> int:
    last_relative, last_position = -1, -1
    for slot, (relative, position) in enumerate(_entries(buf, entries, ">ii")):
        if relative <= last_relative or position <= last_position:
            return slot
        last_relative, last_position = relative, position
    return entries


def time_index_valid_entries(buf, entries: int) -> int:
    last_timestamp, last_relative = None, 0
    for slot, (timestamp, relative) in enumerate(_entries(buf, entries, ">qi")):
        if relative < last_relative or (last_timestamp is not None and timestamp <= last_timestamp):
            return slot
        last_timestamp, last_relative = timestamp, relative
    return entries


# ------------------------------------------------------------------ segments

def _read_header(fd: int, position: int, end_position: int) -> tuple | None:
    """(size, base_offset, last_offset, max_timestamp, header bytes) of the
    batch at position; None at the end; ValueError when torn or malformed."""
    if position >= end_position:
        return None
    header = os.pread(fd, BATCH_HEADER_SIZE, position)
    if len(header) < BATCH_HEADER_SIZE or end_position - position < BATCH_HEADER_SIZE:
        raise ValueError(f"malformed or torn record batch header at position {position}")
    fields = _HEADER.unpack(header)
    size = fields[1] + LOG_OVERHEAD
    if fields[1] < BATCH_HEADER_SIZE - LOG_OVERHEAD or size > end_position - position:
        raise ValueError(f"malformed or torn record batch header at position {position}")
    return size, fields[0], fields[0] + fields[6], fields[8], header


def scan_segment(fd: int, base_offset: int, end_position: int,
                 index_interval_bytes: int = 4096) -> tuple:
    data = memoryview(os.pread(fd, max(end_position, 0), 0))
    position, next_offset, batches = 0, base_offset, 0
    max_timestamp, offset_of_max_timestamp = -1, base_offset
    last_index_position, last_time_index_timestamp = 0, -1
    index, time_index = bytearray(), bytearray()
    stop = None
    while position < len(data):
        reason, size = check_batch(data, position, check_count=False)
        if reason is None:
            header = _HEADER.unpack_from(data, position)
            last_offset = header[0] + header[6]
            if header[0] < next_offset or last_offset - base_offset > 0x7FFFFFFF:
                reason = "offset"
        if reason is not None:
            stop = reason
            break
        if batches == 0 or header[8] > max_timestamp:
            max_timestamp, offset_of_max_timestamp = header[8], last_offset
        if position - last_index_position > index_interval_bytes:
            index += struct.pack(">ii", last_offset - base_offset, position)
            if max_timestamp > last_time_index_timestamp:
                time_index += struct.pack(">qi", max_timestamp, offset_of_max_timestamp - base_offset)
                last_time_index_timestamp = max_timestamp
            last_index_position = position
        position += size
        next_offset = last_offset + 1
        batches += 1
    if stop is None and position < end_position:
        stop = "size"
    return (position, next_offset, max_timestamp, offset_of_max_timestamp, batches,
            bytes(index), bytes(time_index), stop)


def find_batch(fd: int, start_position: int, end_position: int, target_offset: int,
               expected_last_offset: int = -1):
    position = start_position
    while (found := _read_header(fd, position, end_position)) is not None:
        size, base, last, _, _ = found
        if position == start_position and expected_last_offset >= 0 and last != expected_last_offset:
            raise ValueError(f"index entry for offset {expected_last_offset} points at position "
                             f"{start_position}, which holds offsets up to {last}")
        if last >= target_offset:
            return position, size, base, last
        position += size
    return None


def find_timestamp(fd: int, start_position: int, end_position: int,
                   target_timestamp: int, min_offset: int = -1):
    position = start_position
    while (found := _read_header(fd, position, end_position)) is not None:
        size, base, last, max_timestamp, _ = found
        if max_timestamp >= target_timestamp and last >= min_offset:
            return position, size, base, last, max_timestamp
        position += size
    return None


def read_extent(fd: int, start_position: int, walk_position: int, end_position: int,
                max_bytes: int, max_offset: int = -1, min_one_batch: bool = True) -> int:
    if walk_position < start_position:
        raise ValueError("walk_position is before start_position")
    position = walk_position
    while (found := _read_header(fd, position, end_position)) is not None:
        size, _, last, _, _ = found
        if max_offset >= 0 and last >= max_offset:
            break
        if position + size - start_position > max_bytes and not (min_one_batch and position == start_position):
            break
        position += size
    return position


def walk_headers(fd: int, start_position: int, end_position: int) -> tuple:
    position, batches = start_position, 0
    next_offset = max_timestamp = offset_of_max_timestamp = -1
    while True:
        try:
            found = _read_header(fd, position, end_position)
        except ValueError:
            break
        if found is None:
            break
        size, _, last, timestamp, _ = found
        if batches == 0 or timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = timestamp, last
        next_offset, batches, position = last + 1, batches + 1, position + size
    return position, batches, next_offset, max_timestamp, offset_of_max_timestamp


def batch_headers(fd: int, start_position: int, end_position: int, max_batches: int = -1):
    out, position = [], start_position
    while max_batches < 0 or len(out) < max_batches:
        try:
            found = _read_header(fd, position, end_position)
        except ValueError:
            break
        if found is None:
            break
        out.append((position, found[4]))
        position += found[0]
    return out, position


def append_batches(fd: int, buf, position: int, check_count: bool = True):
    """Twin of native append.append_batches: check every batch, then write
    (never overlapped, so ``written`` is always False on a failure)."""
    data = memoryview(buf).cast("B")
    offset = 0
    while offset < len(data):
        reason, size = check_batch(data, offset, check_count)
        if reason is not None:
            return reason, offset, False
        offset += size
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], position + done)
    return None


# -- group-commit journal entries (native journal.pyx) ------------------------------
ENTRY_HEADER_SIZE = 26
_JOURNAL_ENTRY = struct.Struct(">IIQqH")  # size, crc, generation, base offset, name length


def _journal_numbers(generation: int, base_offset: int = 0) -> None:
    if not 0 <= generation <= _MAX_U64:
        raise ValueError(f"generation {generation} does not fit in an unsigned 64-bit integer")
    _as_int64(base_offset)


def _journal_room(out: memoryview, start: int, size: int) -> None:
    if start < 0 or size < ENTRY_HEADER_SIZE or size > 0xFFFFFFFF or start > len(out) - size:
        raise ValueError(f"an entry of {size} bytes at {start} does not fit a buffer of {len(out)}")


def _journal_seal(out: memoryview, start: int, size: int, generation: int) -> None:
    struct.pack_into(">IIQ", out, start, size, 0, generation)
    struct.pack_into(">I", out, start + 4, crc32c(out[start + 8:start + size]))


def put_entry(buffer, start: int, name, generation: int, base_offset: int, records) -> int:
    out = memoryview(buffer).cast("B")
    name, data = bytes(name), memoryview(records).cast("B")
    _journal_numbers(generation, base_offset)
    if len(name) > 0xFFFF:
        raise ValueError(f"a name of {len(name)} bytes does not fit a u16")
    size = ENTRY_HEADER_SIZE + len(name) + len(data)
    _journal_room(out, start, size)
    _JOURNAL_ENTRY.pack_into(out, start, size, 0, 0, base_offset, len(name))
    out[start + ENTRY_HEADER_SIZE:start + ENTRY_HEADER_SIZE + len(name)] = name
    out[start + ENTRY_HEADER_SIZE + len(name):start + size] = data
    _journal_seal(out, start, size, generation)
    return size


def put_padding(buffer, start: int, size: int, generation: int) -> None:
    out = memoryview(buffer).cast("B")
    _journal_numbers(generation)
    _journal_room(out, start, size)
    out[start:start + size] = bytes(size)
    struct.pack_into(">q", out, start + 16, -1)
    _journal_seal(out, start, size, generation)


def seal_entry(buffer, start: int, generation: int) -> None:
    out = memoryview(buffer).cast("B")
    _journal_numbers(generation)
    if start < 0 or start > len(out) - ENTRY_HEADER_SIZE:
        raise ValueError(f"no entry header at {start} of a buffer of {len(out)}")
    (size,) = struct.unpack_from(">I", out, start)
    _journal_room(out, start, size)
    _journal_seal(out, start, size, generation)

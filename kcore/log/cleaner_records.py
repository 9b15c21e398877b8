"""Record-level work of the log cleaner, on RecordBatch v2 bytes.

Layout (KIP-98; Kafka ``DefaultRecordBatch`` / ``DefaultRecord``; the full
table is in kcore/protocol/records.py), big-endian::

    batch   0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32
            16 magic i8 = 2 | 17 crc u32 (CRC-32C of bytes 21..end)
            21 attributes i16 (bits 0-2 codec, 3 LogAppendTime, 4 transactional,
               5 control, 6 delete horizon) | 23 lastOffsetDelta i32
            27 baseTimestamp i64 | 35 maxTimestamp i64 | 43 producerId i64
            51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32
            61 records, one compressed block when the codec is not 0
    record  length varint | attributes i8 | timestampDelta varlong
            | offsetDelta varint | keyLength varint (-1 = null key) | key
            | valueLength varint (-1 = null value: a tombstone) | value | headers

A record is encoded relative to its batch's baseOffset and baseTimestamp,
so a retained record is copied byte for byte into the rewritten batch. The
rewritten batch keeps baseOffset and lastOffsetDelta (the batch still spans
the offsets it was produced with, so the producer's sequence range
baseSequence..baseSequence+lastOffsetDelta replays unchanged), the producer
fields, the leader epoch and maxTimestamp (LogAppendTime records read it).
Only stamping a delete horizon moves baseTimestamp (KIP-534: attribute bit
6 set, baseTimestamp := horizon); then every copied record's timestampDelta
is re-encoded so that baseTimestamp + timestampDelta is still its timestamp.

Varints are zigzag-encoded; the scanners decode one-byte varints inline
(lengths and deltas below 64 are one byte) and call the native decoder for
longer ones. Pure functions; safe from any thread.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kcore._native.records import BATCH_HEADER_SIZE, crc32c, decode_varint, encode_varint
from kcore.protocol.compression import compress, decompress

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

# Header fields in order, as kcore._native.records.parse_batch_header returns them.
_HEADER = struct.Struct(">qiibIhiqqqhii")
_ATTRIBUTES_AT = 21
_CRC_AT = 17
_LOG_OVERHEAD = 12  # baseOffset + batchLength


class BatchHeader(NamedTuple):
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

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return self.batch_length + _LOG_OVERHEAD

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None


class FilterResult(NamedTuple):
    """What ``filter_records`` kept: ``runs`` are [start, end) byte ranges
    of the records section, in order; ``retained`` of ``total`` records
    survived, ``tombstones`` of them with a null value."""

    runs: list[tuple[int, int]]
    retained: int
    total: int
    tombstones: int


def records_section(batch: bytes, attributes: int) -> bytes:
    """The decoded records section of one whole batch."""
    codec = attributes & CODEC_MASK
    if codec == 0:
        return batch[BATCH_HEADER_SIZE:]
    return decompress(codec, memoryview(batch)[BATCH_HEADER_SIZE:])


def index_keys(section: bytes, base_offset: int, offset_map: dict[bytes, int]) -> int:
    """Set ``offset_map[key] = offset`` for every keyed record of the
    section, in order (so the latest offset wins); returns the record count."""
    position, end, count = 0, len(section), 0
    while position < end:
        byte = section[position]
        if byte < 0x80:
            length, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            length, position = decode_varint(section, position)
        record_end = position + length
        field = position + 1  # skip the record attributes
        if section[field] < 0x80:
            field += 1
        else:
            field = decode_varint(section, field)[1]
        byte = section[field]
        if byte < 0x80:
            offset_delta, field = (byte >> 1) ^ -(byte & 1), field + 1
        else:
            offset_delta, field = decode_varint(section, field)
        byte = section[field]
        if byte < 0x80:
            key_length, field = (byte >> 1) ^ -(byte & 1), field + 1
        else:
            key_length, field = decode_varint(section, field)
        if key_length >= 0:
            offset_map[section[field:field + key_length]] = base_offset + offset_delta
        position = record_end
        count += 1
    if position != end:
        raise ValueError(f"records overrun their section by {position - end} bytes")
    return count


def filter_records(section: bytes, base_offset: int, offset_map: dict[bytes, int],
                   drop_tombstones: bool) -> FilterResult:
    """Keep each record that has a key, is the latest for it
    (``offset >= offset_map.get(key)``; keys absent from the map are kept)
    and, when ``drop_tombstones``, has a value."""
    runs: list[tuple[int, int]] = []
    run_start = run_end = -1
    position, end = 0, len(section)
    retained = total = tombstones = 0
    get = offset_map.get
    while position < end:
        start = position
        byte = section[position]
        if byte < 0x80:
            length, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            length, position = decode_varint(section, position)
        record_end = position + length
        field = position + 1
        if section[field] < 0x80:
            field += 1
        else:
            field = decode_varint(section, field)[1]
        byte = section[field]
        if byte < 0x80:
            offset_delta, field = (byte >> 1) ^ -(byte & 1), field + 1
        else:
            offset_delta, field = decode_varint(section, field)
        byte = section[field]
        if byte < 0x80:
            key_length, field = (byte >> 1) ^ -(byte & 1), field + 1
        else:
            key_length, field = decode_varint(section, field)
        position = record_end
        total += 1
        if key_length < 0:
            continue
        key = section[field:field + key_length]
        if base_offset + offset_delta < get(key, -1):
            continue
        field += key_length
        tombstone = section[field] == 0x01  # zigzag(-1): a null value
        if tombstone:
            if drop_tombstones:
                continue
            tombstones += 1
        retained += 1
        if start == run_end:
            run_end = record_end
        else:
            if run_start >= 0:
                runs.append((run_start, run_end))
            run_start, run_end = start, record_end
    if run_start >= 0:
        runs.append((run_start, run_end))
    if position != end:
        raise ValueError(f"records overrun their section by {position - end} bytes")
    return FilterResult(runs, retained, total, tombstones)


def has_null_key(batch: bytes | bytearray | memoryview) -> bool:
    """True when any record of the whole batch ``batch`` has a null key, or
    the records cannot be read: a compacted topic refuses both (Kafka
    ``LogValidator``: INVALID_RECORD)."""
    view = memoryview(batch).cast("B")
    attributes = int.from_bytes(view[_ATTRIBUTES_AT:_ATTRIBUTES_AT + 2], "big")
    try:
        section = records_section(bytes(view), attributes)
        position, end = 0, len(section)
        while position < end:
            length, position = decode_varint(section, position)
            record_end = position + length
            field = decode_varint(section, position + 1)[1]
            field = decode_varint(section, field)[1]
            if decode_varint(section, field)[0] < 0 or record_end > end or length < 1:
                return True
            position = record_end
    except (ValueError, IndexError):
        return True
    return False


def rebase_timestamps(records: bytes, shift: int) -> bytearray:
    """Re-encode concatenated records with ``timestampDelta += shift`` (the
    old baseTimestamp minus the new one); the other fields are copied."""
    out = bytearray()
    position, end = 0, len(records)
    while position < end:
        length, body = decode_varint(records, position)
        record_end = body + length
        timestamp_delta, rest = decode_varint(records, body + 1)
        new_body = bytearray(records[body:body + 1])
        new_body += encode_varint(timestamp_delta + shift)
        new_body += records[rest:record_end]
        out += encode_varint(len(new_body))
        out += new_body
        position = record_end
    return out


def build_batch(header: BatchHeader, records: bytes | bytearray, count: int,
                attributes: int, base_timestamp: int) -> bytearray:
    """A batch with ``header``'s offsets, producer fields, leader epoch and
    maxTimestamp around ``count`` already-encoded ``records`` (compressed
    here with the codec in ``attributes``); the CRC-32C is computed."""
    codec = attributes & CODEC_MASK
    if codec and count:
        records = compress(codec, records)
    elif not count:
        attributes &= ~CODEC_MASK  # an empty batch carries no compressed block
    batch = bytearray(BATCH_HEADER_SIZE)
    _HEADER.pack_into(batch, 0, header.base_offset, BATCH_HEADER_SIZE - _LOG_OVERHEAD + len(records),
                      header.partition_leader_epoch, header.magic, 0, attributes,
                      header.last_offset_delta, base_timestamp, header.max_timestamp,
                      header.producer_id, header.producer_epoch, header.base_sequence, count)
    batch += records
    struct.pack_into(">I", batch, _CRC_AT, crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))
    return batch


def empty_batch(header: BatchHeader) -> bytearray:
    """The batch's header alone (recordsCount 0, no codec): what is kept of
    a producer's last batch once compaction removed all its records, so its
    sequence numbers still replay (Kafka ``writeEmptyHeader``)."""
    return build_batch(header, b"", 0, header.attributes, header.base_timestamp)

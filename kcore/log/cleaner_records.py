"""Record-level work of the log cleaner, on RecordBatch v2 bytes.

Layout: kcore/_native/batch_layout.py (KIP-98; Kafka ``DefaultRecordBatch``
/ ``DefaultRecord``). Records are found by the native record walk
(``records.walk_records``: one ``RecordSpan`` per record, its byte range,
deltas and key/value lengths), so this module never decodes a varint
itself.

A record is encoded relative to its batch's baseOffset and baseTimestamp,
so a retained record is copied byte for byte into the rewritten batch. The
rewritten batch keeps baseOffset and lastOffsetDelta (the batch still spans
the offsets it was produced with, so the producer's sequence range
baseSequence..baseSequence+lastOffsetDelta replays unchanged), the producer
fields, the leader epoch and maxTimestamp (LogAppendTime records read it).
Only stamping a delete horizon moves baseTimestamp (KIP-534: attribute bit
6 set, baseTimestamp := horizon); then every copied record's timestampDelta
is re-encoded so that baseTimestamp + timestampDelta is still its timestamp.

Pure functions; safe from any thread.
"""
from __future__ import annotations

from typing import NamedTuple

from typing_extensions import Buffer

from kcore._native import records as native_records
from kcore._native.batch_layout import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    HEADER,
    LOG_OVERHEAD,
)
from kcore._native.records import BatchHeader, crc32c, encode_varint, walk_records
from kcore.protocol.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, compress, decompress


class FilterResult(NamedTuple):
    """What ``filter_records`` kept: ``runs`` are [start, end) byte ranges
    of the records section, in order; ``retained`` of ``total`` records
    survived, ``tombstones`` of them with a null value."""

    runs: list[tuple[int, int]]
    retained: int
    total: int
    tombstones: int


def records_section(batch: Buffer, attributes: int,
                    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """The decoded records section of one whole batch, decompressed to at
    most ``max_size`` bytes (compression.DecompressedSizeError past it)."""
    codec = attributes & COMPRESSION_CODEC_MASK
    section = memoryview(batch)[BATCH_HEADER_SIZE:]
    if codec == 0:
        return bytes(section)
    return decompress(codec, section, max_size)


def index_keys(section: bytes, base_offset: int, offset_map: dict[bytes, int]) -> int:
    """Set ``offset_map[key] = offset`` for every keyed record of the
    section, in order (so the latest offset wins); returns the record count."""
    spans = walk_records(section)
    for span in spans:
        if span.key_length >= 0:
            key = section[span.key_position:span.key_position + span.key_length]
            offset_map[key] = base_offset + span.offset_delta
    return len(spans)


def filter_records(section: bytes, base_offset: int, offset_map: dict[bytes, int],
                   drop_tombstones: bool) -> FilterResult:
    """Keep each record that has a key, is the latest for it
    (``offset >= offset_map.get(key)``; keys absent from the map are kept)
    and, when ``drop_tombstones``, has a value."""
    runs: list[tuple[int, int]] = []
    run_start = run_end = -1
    retained = tombstones = 0
    get = offset_map.get
    spans = walk_records(section)
    for span in spans:
        if span.key_length < 0:
            continue
        key = section[span.key_position:span.key_position + span.key_length]
        if base_offset + span.offset_delta < get(key, -1):
            continue
        if span.value_length < 0:
            if drop_tombstones:
                continue
            tombstones += 1
        retained += 1
        if span.position == run_end:
            run_end = span.end
        else:
            if run_start >= 0:
                runs.append((run_start, run_end))
            run_start, run_end = span.position, span.end
    if run_start >= 0:
        runs.append((run_start, run_end))
    return FilterResult(runs, retained, len(spans), tombstones)


def has_null_key(batch: Buffer) -> bool:
    """True when any record of the whole batch ``batch`` has a null key, or
    the records cannot be read: a compacted topic refuses both (Kafka
    ``LogValidator``: INVALID_RECORD). The walk is native; only a
    compressed batch is decompressed here first."""
    view = memoryview(batch).cast("B")
    attributes = int.from_bytes(view[ATTRIBUTES_OFFSET:ATTRIBUTES_OFFSET + 2], "big")
    try:
        section = records_section(view, attributes)
    except ValueError:
        return True
    return native_records.has_null_key(section)


def rebase_timestamps(records: Buffer, shift: int) -> bytearray:
    """Re-encode concatenated records with ``timestampDelta += shift`` (the
    old baseTimestamp minus the new one); the other fields are copied."""
    data = bytes(records)
    out = bytearray()
    for span in walk_records(data):
        body = bytearray((span.attributes,))
        body += encode_varint(span.timestamp_delta + shift)
        body += data[span.offset_delta_position:span.end]
        out += encode_varint(len(body))
        out += body
    return out


def build_batch(header: BatchHeader, records: bytes | bytearray, count: int,
                attributes: int, base_timestamp: int) -> bytearray:
    """A batch with ``header``'s offsets, producer fields, leader epoch and
    maxTimestamp around ``count`` already-encoded ``records`` (compressed
    here with the codec in ``attributes``); the CRC-32C is computed."""
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec and count:
        records = compress(codec, records)
    elif not count:
        attributes &= ~COMPRESSION_CODEC_MASK  # an empty batch carries no compressed block
    batch = bytearray(BATCH_HEADER_SIZE)
    HEADER.pack_into(batch, 0, header.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(records),
                     header.partition_leader_epoch, header.magic, 0, attributes,
                     header.last_offset_delta, base_timestamp, header.max_timestamp,
                     header.producer_id, header.producer_epoch, header.base_sequence, count)
    batch += records
    batch[CRC_OFFSET:CRC_OFFSET + 4] = crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]).to_bytes(4, "big")
    return batch


def empty_batch(header: BatchHeader) -> bytearray:
    """The batch's header alone (recordsCount 0, no codec): what is kept of
    a producer's last batch once compaction removed all its records, so its
    sequence numbers still replay (Kafka ``writeEmptyHeader``)."""
    return build_batch(header, b"", 0, header.attributes, header.base_timestamp)

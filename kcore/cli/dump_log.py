"""`kcore dump-log PATH...`: print segment files the way kafka-dump-log does.

File kinds, by suffix (docs/storage.md#log-directories; Kafka `DumpLogSegments`):

``.log``
    Concatenated v2 RecordBatches. One line per batch::

        baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1
        producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0
        isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty
        position: 0 CreateTime: 1700000000002 size: 110 magic: 2
        compresscodec: none crc: 3154084150 isvalid: true

    (all on one line; the timestamp printed is the batch's maxTimestamp).
    ``--deep-iteration`` adds one ``| offset: ...`` line per record (offset,
    timestamp, keySize, valueSize, sequence, headerKeys; markers add
    endTxnMarker and coordinatorEpoch); ``--records`` implies it and adds
    the key and payload as UTF-8 (undecodable bytes shown as \\x escapes).
    A tail that is not a whole valid batch header ends the dump with
    ``Found N invalid bytes at the end of NAME: reason``.
``.index``
    8-byte entries ``i32 relative offset, i32 position``, printed as
    ``offset: N position: P`` (absolute offset).
``.timeindex``
    12-byte entries ``i64 timestamp, i32 relative offset``, printed as
    ``timestamp: T offset: O``.

For both indexes the base offset comes from the 20-digit file name, and a
zero entry after the first ends the listing (preallocated, unwritten space).

Files are read with plain positioned reads, one batch at a time, so memory
stays bounded by the largest batch; nothing here depends on kcore.log.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from collections.abc import Iterator
from typing import TextIO

from kcore._native.batch_layout import BATCH_HEADER_SIZE, COMPRESSION_CODEC_MASK, LENGTH_OFFSET, LOG_OVERHEAD
from kcore.protocol.compression import CompressionType
from kcore.protocol.constants import INT32_MAX
from kcore.protocol.records import CorruptBatchError, Record, RecordBatch

_OFFSET_INDEX_ENTRY = struct.Struct(">ii")
_TIME_INDEX_ENTRY = struct.Struct(">qi")
_BATCH_LENGTH = struct.Struct(">i")


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "dump-log", help="print .log, .index and .timeindex files like kafka-dump-log",
        description="Print segment files: batches of .log files, entries of .index and "
                    ".timeindex files.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="segment file(s)")
    parser.add_argument("--records", action="store_true",
                        help="print every record with its key and payload "
                             "(implies --deep-iteration)")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="print every record's metadata, decompressing batches")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Dump each path; 0 when all could be read, 1 when a file was missing or unreadable."""
    out = out or sys.stdout
    status = 0
    deep = args.deep_iteration or args.records
    for path in args.paths:
        print(f"Dumping {path}", file=out)
        try:
            if path.endswith(".log"):
                dump_log_file(path, out, deep_iteration=deep, print_records=args.records)
            elif path.endswith(".timeindex"):
                dump_time_index(path, out)
            elif path.endswith(".index"):
                dump_offset_index(path, out)
            else:
                print(f"Ignoring unknown file {path}", file=sys.stderr)
        except OSError as exc:
            print(f"kcore dump-log: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
    return status


def _base_offset_from_name(path: str) -> int | None:
    stem = os.path.basename(path).split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


# ---------------------------------------------------------------- .log files

def dump_log_file(path: str, out: TextIO, *, deep_iteration: bool = False,
                  print_records: bool = False) -> None:
    base_offset = _base_offset_from_name(path)
    if base_offset is not None:
        print(f"Log starting offset: {base_offset}", file=out)
    with open(path, "rb", buffering=0) as file:
        file_size = os.fstat(file.fileno()).st_size
        valid_bytes = 0
        problem = None
        for position, batch, reason in _read_batches(file.fileno(), file_size):
            if batch is None:
                problem = reason
                break
            print(_batch_line(batch, position), file=out)
            if deep_iteration:
                _print_batch_records(batch, out, print_records)
            valid_bytes = position + batch.size_in_bytes
    if valid_bytes < file_size:
        print(f"Found {file_size - valid_bytes} invalid bytes at the end of "
              f"{os.path.basename(path)}: {problem}", file=out)


def _read_batches(fd: int, file_size: int) -> Iterator[tuple[int, RecordBatch | None, str | None]]:
    """Yield (position, batch, None) per whole batch, then (position, None, reason)
    when bytes remain that are not a whole batch with a valid header."""
    position = 0
    while position < file_size:
        remaining = file_size - position
        if remaining < BATCH_HEADER_SIZE:
            yield position, None, f"{remaining} bytes are less than a batch header"
            return
        length = os.pread(fd, _BATCH_LENGTH.size, position + LENGTH_OFFSET)
        if len(length) < _BATCH_LENGTH.size:
            # A broker cut the file back after the stat (a failed append's
            # bytes, or a follower's truncation): what was there is gone.
            yield position, None, f"the file ends at position {position}: it shrank while being read"
            return
        (batch_length,) = _BATCH_LENGTH.unpack(length)
        size = LOG_OVERHEAD + batch_length
        if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            yield position, None, f"batch length {batch_length} at position {position} is impossible"
            return
        if size > remaining:
            yield position, None, (f"partial batch at position {position} "
                                   f"(needs {size} bytes, {remaining} remain)")
            return
        data = os.pread(fd, size, position)
        if len(data) < size:
            yield position, None, f"short read at position {position}"
            return
        try:
            batch = RecordBatch(data)
        except CorruptBatchError as exc:
            yield position, None, f"{exc} (relative to position {position})"
            return
        yield position, batch, None
        position += size


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _codec_name(attributes: int) -> str:
    codec = attributes & COMPRESSION_CODEC_MASK
    try:
        return CompressionType(codec).kafka_name
    except ValueError:
        return f"unknown({codec})"


def _batch_line(batch: RecordBatch, position: int) -> str:
    horizon = batch.delete_horizon_ms
    horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
        f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
        f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_java_bool(batch.is_transactional)} "
        f"isControl: {_java_bool(batch.is_control)} deleteHorizonMs: {horizon_text} "
        f"position: {position} {batch.timestamp_type.kafka_name}: {batch.max_timestamp} "
        f"size: {batch.size_in_bytes} magic: {batch.magic} "
        f"compresscodec: {_codec_name(batch.attributes)} crc: {batch.crc} "
        f"isvalid: {_java_bool(batch.is_valid())}"
    )


def _print_batch_records(batch: RecordBatch, out: TextIO, print_records: bool) -> None:
    try:
        records = batch.records()
    except (CorruptBatchError, ValueError) as exc:
        print(f"| cannot decode the records of this batch: {exc}", file=out)
        return
    for record in records:
        print(_record_line(batch, record, print_records), file=out)


def _record_line(batch: RecordBatch, record: Record, print_records: bool) -> str:
    parts = [
        f"| offset: {record.offset} {batch.timestamp_type.kafka_name}: {record.timestamp}",
        f"keySize: {_size(record.key)} valueSize: {_size(record.value)}",
        f"sequence: {_record_sequence(batch, record)}",
        f"headerKeys: [{','.join(key for key, _ in record.headers)}]",
    ]
    if batch.is_control:
        parts.append(_control_text(batch))
    elif print_records:
        if record.key is not None:
            parts.append(f"key: {_text(record.key)}")
        if record.value is not None:
            parts.append(f"payload: {_text(record.value)}")
    return " ".join(parts)


def _control_text(batch: RecordBatch) -> str:
    try:
        return f"endTxnMarker: {batch.control_type.name} coordinatorEpoch: {batch.coordinator_epoch}"
    except CorruptBatchError as exc:
        return f"controlType: unreadable ({exc})"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _record_sequence(batch: RecordBatch, record: Record) -> int:
    if batch.base_sequence == -1 or record.offset is None:
        return -1
    delta = record.offset - batch.base_offset
    return (batch.base_sequence + delta) % (INT32_MAX + 1)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


# ------------------------------------------------------------- index files

def dump_offset_index(path: str, out: TextIO) -> None:
    _dump_index(path, out, _OFFSET_INDEX_ENTRY,
                lambda base, relative_offset, position:
                f"offset: {base + relative_offset} position: {position}")


def dump_time_index(path: str, out: TextIO) -> None:
    _dump_index(path, out, _TIME_INDEX_ENTRY,
                lambda base, timestamp, relative_offset:
                f"timestamp: {timestamp} offset: {base + relative_offset}")


def _dump_index(path: str, out: TextIO, entry: struct.Struct, format_entry) -> None:
    base_offset = _base_offset_from_name(path) or 0
    with open(path, "rb") as file:
        data = file.read()
    entries = len(data) // entry.size
    if entries == 0:
        print(f"{path} is empty.", file=out)
    for index, fields in enumerate(entry.iter_unpack(data[:entries * entry.size])):
        if index > 0 and not any(fields):
            print(f"Entries {index}..{entries - 1} are zero (preallocated, unwritten): "
                  f"end of index", file=out)
            break
        print(format_entry(base_offset, *fields), file=out)
    trailing = len(data) - entries * entry.size
    if trailing:
        print(f"Found {trailing} trailing bytes at the end of {os.path.basename(path)}: "
              f"not a whole {entry.size}-byte entry", file=out)

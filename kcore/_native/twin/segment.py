"""Twin of native/segment.pyx: the recovery scan and the header-only walks
over a segment file."""
from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from kcore._native.batch_layout import BATCH_HEADER_SIZE, LOG_OVERHEAD
from kcore._native.twin.records import check_batch, parse_batch_header


def _read_header(fd: int, position: int, end_position: int) -> tuple | None:
    """(size, base_offset, last_offset, max_timestamp, header bytes) of the
    batch at position; None at the end; ValueError when torn or malformed."""
    if position >= end_position:
        return None
    header = os.pread(fd, BATCH_HEADER_SIZE, position)
    if len(header) < BATCH_HEADER_SIZE or end_position - position < BATCH_HEADER_SIZE:
        raise ValueError(f"malformed or torn record batch header at position {position}")
    fields = parse_batch_header(header)
    size = fields.size_in_bytes
    if fields.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or size > end_position - position:
        raise ValueError(f"malformed or torn record batch header at position {position}")
    return size, fields.base_offset, fields.last_offset, fields.max_timestamp, header


def scan_segment(fd: int, base_offset: int, end_position: int,
                 index_interval_bytes: int = 4096, start_position: int = 0,
                 max_timestamp: int = -1, offset_of_max_timestamp: int = -1,
                 last_time_index_timestamp: int = -1) -> tuple:
    if not 0 <= start_position <= end_position:
        raise ValueError(f"start_position {start_position} is outside [0, {end_position}]")
    data = memoryview(os.pread(fd, max(end_position, 0), 0))
    position, next_offset, batches = start_position, base_offset, 0
    have_max = offset_of_max_timestamp >= 0
    if not have_max:
        max_timestamp, offset_of_max_timestamp = -1, base_offset
    last_index_position = start_position
    index, time_index = bytearray(), bytearray()
    stop = None
    while position < len(data):
        reason, size = check_batch(data, position, check_count=False)
        if reason is None:
            header = parse_batch_header(data, position)
            last_offset = header.last_offset
            if header.base_offset < next_offset or last_offset - base_offset > 0x7FFFFFFF:
                reason = "offset"
        if reason is not None:
            stop = reason
            break
        if not have_max or header.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = header.max_timestamp, last_offset
            have_max = True
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
                max_bytes: int, max_offset: int = -1, min_one_batch: bool = True,
                stop_when_uncached: bool = False) -> int:
    if walk_position < start_position:
        raise ValueError("walk_position is before start_position")
    position = walk_position
    while True:
        if stop_when_uncached and position > start_position and not _cached(fd, position, end_position):
            break
        found = _read_header(fd, position, end_position)
        if found is None:
            break
        size, _, last, _, _ = found
        if max_offset >= 0 and last >= max_offset:
            break
        if position + size - start_position > max_bytes and not (min_one_batch and position == start_position):
            break
        position += size
    return position


def _cached(fd: int, position: int, end_position: int) -> bool:
    """Whether the header at position is in the page cache (RWF_NOWAIT
    reads it or fails with EAGAIN; a short read means its tail is not)."""
    want = min(BATCH_HEADER_SIZE, end_position - position)
    if want <= 0:
        return True
    try:
        return os.preadv(fd, [bytearray(want)], position, os.RWF_NOWAIT) >= want
    except BlockingIOError:
        return False
    except OSError:
        return True  # no RWF_NOWAIT here: the walk reads as it always did


def _whole_headers(fd: int, position: int, end_position: int) -> Iterator[tuple[int, tuple]]:
    """(position, header) per batch until the range ends or a header is
    malformed or torn (where the walks stop quietly)."""
    while True:
        try:
            found = _read_header(fd, position, end_position)
        except ValueError:
            return
        if found is None:
            return
        yield position, found
        position += found[0]


def walk_headers(fd: int, start_position: int, end_position: int) -> tuple:
    position, batches = start_position, 0
    next_offset = max_timestamp = offset_of_max_timestamp = -1
    for at, (size, _, last, timestamp, _) in _whole_headers(fd, start_position, end_position):
        if batches == 0 or timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = timestamp, last
        next_offset, batches, position = last + 1, batches + 1, at + size
    return position, batches, next_offset, max_timestamp, offset_of_max_timestamp


def batch_headers(fd: int, start_position: int, end_position: int,
                  max_batches: int = -1) -> tuple[list[tuple[int, bytes]], int]:
    out: list[tuple[int, bytes]] = []
    position = start_position
    for at, found in _whole_headers(fd, start_position, end_position):
        if 0 <= max_batches <= len(out):
            break
        out.append((at, found[4]))
        position = at + found[0]
    return out, position

"""Twin of native/index.pyx: searches and checks over Kafka's sparse index
files (offset index: i32 relative offset | i32 position; time index: i64
timestamp | i32 relative offset)."""
from __future__ import annotations

import mmap
import struct

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


def ReadOnlyMapping(fd: int, length: int) -> mmap.mmap:  # noqa: N802 - the native class's name
    """The mapping as the standard library makes it (it keeps a dup of
    ``fd``, which the native one avoids)."""
    if length <= 0:
        raise ValueError(f"cannot map {length} bytes")
    return mmap.mmap(fd, length, access=mmap.ACCESS_READ)

"""Twin of native/journal.pyx: sealed group-commit journal entries (the
format is kcore/log/journal.py's)."""
from __future__ import annotations

import struct

from kcore._native.twin.records import as_int64, crc32c

_MAX_U64 = (1 << 64) - 1
ENTRY_HEADER_SIZE = 26
_JOURNAL_ENTRY = struct.Struct(">IIQqH")  # size, crc, generation, base offset, name length


def _journal_numbers(generation: int, base_offset: int = 0) -> None:
    if not 0 <= generation <= _MAX_U64:
        raise ValueError(f"generation {generation} does not fit in an unsigned 64-bit integer")
    as_int64(base_offset)


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

"""The sparse offset index of a segment (``<base_offset>.index``).

Entry (8 bytes, big-endian; Kafka ``OffsetIndex``)::

    i32 relative_offset   last offset of a batch - segment base offset
    i32 position          byte position of that batch in the .log

One entry is added whenever more than ``index.interval.bytes`` were
appended since the previous one; both fields strictly increase. A lookup
gives the largest entry at or below the target offset: the position of a
batch boundary from which a short header walk finds the target's batch.

Not thread-safe: one owner (the partition's Log, on one event loop).
"""
from __future__ import annotations

import struct

from kcore._native import index as native_index
from kcore.log.errors import KafkaStorageError
from kcore.log.index_file import IndexFile
from kcore.protocol.constants import INT32_MAX

_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFile):
    entry_size = 8

    def _valid_entries(self, buffer, entries: int) -> int:
        return native_index.offset_index_valid_entries(buffer, entries)

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        last = self._last_entry()
        if last is not None and (relative <= last[0] or position <= last[1]):
            raise KafkaStorageError(
                f"{self.path}: entry ({offset}, {position}) is not after the last one "
                f"({last[0] + self.base_offset}, {last[1]})")
        if self.entries >= self.capacity:
            raise KafkaStorageError(f"{self.path}: index is full ({self.entries} entries)")
        self._append_entry(_ENTRY.pack(relative, position), (relative, position))

    def entry(self, slot: int) -> tuple[int, int]:
        """(relative_offset, position) of entry ``slot``."""
        return native_index.offset_index_entry(self.buffer, slot)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below ``offset``;
        (base_offset, 0) when there is none."""
        slot = native_index.offset_index_lookup(self.buffer, self.entries, offset - self.base_offset)
        if slot < 0:
            return self.base_offset, 0
        relative, position = native_index.offset_index_entry(self.buffer, slot)
        return self.base_offset + relative, position

    def last_entry(self) -> tuple[int, int]:
        """(offset, position) of the last entry, (base_offset, 0) if none."""
        last = self._last_entry()
        if last is None:
            return self.base_offset, 0
        return self.base_offset + last[0], last[1]

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= ``offset``."""
        slot = native_index.offset_index_lookup(self.buffer, self.entries, offset - self.base_offset - 1)
        self.truncate_entries(slot + 1)

    def truncate_to_position(self, position: int) -> None:
        """Remove entries pointing at or past ``position``."""
        keep = 0
        while keep < self.entries and self.entry(keep)[1] < position:
            keep += 1
        self.truncate_entries(keep)

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

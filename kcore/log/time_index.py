"""The sparse time index of a segment (``<base_offset>.timeindex``).

Entry (12 bytes, big-endian; Kafka ``TimeIndex``)::

    i64 timestamp         largest batch max timestamp appended so far
    i32 relative_offset   last offset of the batch holding that timestamp

Written beside each offset-index entry when the timestamp grew, and once
more when the segment stops being active. Timestamps strictly increase,
offsets never decrease. A lookup gives the largest entry at or below a
timestamp: where a forward search for "first offset with timestamp >= t"
may start.

Not thread-safe: one owner (the partition's Log, on one event loop).
"""
from __future__ import annotations

import struct

from kcore._native import index as native_index
from kcore.log.errors import KafkaStorageError
from kcore.log.index_file import IndexFile

_ENTRY = struct.Struct(">qi")


class TimeIndex(IndexFile):
    entry_size = 12

    def _valid_entries(self, buffer, entries: int) -> int:
        return native_index.time_index_valid_entries(buffer, entries)

    def entry(self, slot: int) -> tuple[int, int]:
        """(timestamp, relative_offset) of entry ``slot``."""
        return native_index.time_index_entry(self.buffer, slot)

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (-1, base_offset) if none."""
        last = self._last_entry()
        if last is None:
            return -1, self.base_offset
        return last[0], self.base_offset + last[1]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) when the timestamp is larger than the
        last entry's; True if appended. ``skip_full_check`` lets the final
        entry of a rolled segment go past a full index (the file grows by
        one entry)."""
        last = self._last_entry()
        relative = offset - self.base_offset
        if last is not None:
            if timestamp <= last[0]:
                return False
            if relative < last[1]:
                raise KafkaStorageError(
                    f"{self.path}: offset {offset} is before the last entry's {last[1] + self.base_offset}")
        if self.entries >= self.capacity and not skip_full_check:
            raise KafkaStorageError(f"{self.path}: time index is full ({self.entries} entries)")
        self._append_entry(_ENTRY.pack(timestamp, relative), (timestamp, relative))
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry at or below
        ``timestamp``; (-1, base_offset) when there is none."""
        slot = native_index.time_index_lookup(self.buffer, self.entries, timestamp)
        if slot < 0:
            return -1, self.base_offset
        entry_timestamp, relative = self.entry(slot)
        return entry_timestamp, self.base_offset + relative

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= ``offset``."""
        keep = self.entries
        while keep > 0 and self.base_offset + self.entry(keep - 1)[1] >= offset:
            keep -= 1
        self.truncate_entries(keep)

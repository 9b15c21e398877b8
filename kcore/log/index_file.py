"""Memory-mapped, preallocated index file shared by OffsetIndex and TimeIndex.

An index file is an array of fixed-size big-endian entries (see
offset_index.py and time_index.py for the layouts). The active segment's
index is preallocated to ``segment.index.bytes`` (rounded down to whole
entries) so appends never grow the file; rolling or closing trims it to the
entries in use. After a crash the untrimmed tail is zero-filled: the number
of entries in use is the well-ordered prefix found by the native check, and
recovery rebuilds the index anyway. Source: Kafka ``AbstractIndex``.

Not thread-safe: one owner (the partition's Log, on one event loop).
"""
from __future__ import annotations

import mmap
import os
from abc import ABC, abstractmethod
from pathlib import Path

from kcore.log.errors import KafkaStorageError


class IndexFile(ABC):
    entry_size = 0  # set by subclasses

    def __init__(self, path: Path, base_offset: int, max_index_size: int):
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._mmap: mmap.mmap | None = None
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(self._fd).st_size
            self.length = length - length % self.entry_size
            self.entries = self.length // self.entry_size
            self._map()
            self.entries = self._valid_entries(self.entries)
            # A trimmed file holds only entries; anything out of order in it
            # means the file is damaged.
            self.damaged = self.entries * self.entry_size != length and length < self.max_index_size
        except BaseException:
            self.close()
            raise

    # -- subclass hooks --------------------------------------------------------
    @abstractmethod
    def _valid_entries(self, entries: int) -> int:
        """How many of the first ``entries`` entries are well-ordered."""

    # -- mapping ---------------------------------------------------------------
    def _map(self) -> None:
        self._unmap()
        if self.length > 0:
            self._mmap = mmap.mmap(self._fd, self.length)

    def _unmap(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    @property
    def max_entries(self) -> int:
        return self.length // self.entry_size

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    @property
    def buffer(self) -> mmap.mmap | bytes:
        return self._mmap if self._mmap is not None else b""

    def resize(self, new_size: int) -> None:
        """Resize the file (and mapping) to ``new_size`` rounded down to whole
        entries, never below the entries in use."""
        length = max(new_size - new_size % self.entry_size, self.entries * self.entry_size)
        if length == self.length:
            return
        self._unmap()
        try:
            os.ftruncate(self._fd, length)
        except OSError as exc:
            raise KafkaStorageError(f"cannot resize {self.path}: {exc}") from exc
        self.length = length
        self._map()

    def preallocate(self) -> None:
        """Grow to ``max_index_size`` so the active segment can append."""
        self.resize(self.max_index_size)

    def trim(self) -> None:
        """Shrink the file to the entries in use (on roll and close)."""
        self.resize(self.entries * self.entry_size)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.entries = 0
        self.damaged = False

    def truncate_entries(self, entries: int) -> None:
        if entries < self.entries:
            self._mmap[entries * self.entry_size:self.entries * self.entry_size] = \
                bytes((self.entries - entries) * self.entry_size)
            self.entries = entries

    def write_entries(self, packed: bytes) -> None:
        """Replace every entry with ``packed`` (whole entries, as on disk)."""
        count = len(packed) // self.entry_size
        if count > self.max_entries:
            self.resize(count * self.entry_size)
        self.reset()
        if self._mmap is not None:
            self._mmap[:len(packed)] = packed
            tail = self.length - len(packed)
            if tail:
                self._mmap[len(packed):] = bytes(tail)
        self.entries = count

    def flush(self) -> None:
        if self._mmap is not None:
            self._mmap.flush()

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = Path(path)

    def close(self) -> None:
        self._unmap()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

"""Index file shared by OffsetIndex and TimeIndex: entries in memory while
its segment is active, a read-only mapping once it is not.

An index file is an array of fixed-size big-endian entries (see
offset_index.py and time_index.py for the layouts). Source: Kafka
``AbstractIndex``, with three differences:

* Active segment (``make_appendable``): the entries live in a memory image
  and reach the file by pwrite on ``sync`` (flush, roll, close). Storing
  into a shared mapping instead costs a page fault per store once
  writeback has cleaned the page, and that fault is where the kernel
  throttles a process that dirties pages fast: 35-160 us per entry
  measured here while appending 1 MiB batches, against ~4 us for a pwrite
  and ~0 for the image. Losing unsynced entries in a crash costs nothing:
  recovery rebuilds the entries past the recovery point from the log, and
  ``flush`` syncs the index before the recovery point moves.
* The file is never preallocated: ``capacity`` (``segment.index.bytes`` in
  whole entries) bounds the image, the file holds what was written. A
  preallocated 10 MiB file per active segment cost two ftruncates per
  partition on every start and roll, and after a crash every index read
  back zeros: ~3 ms of page faults per sparse file mapped (measured here,
  2,000 partitions), 45% of a restart.
* No descriptor stays open: writes open the file, pwrite and close (an
  open is ~2 us, noise beside a flush's fdatasync), and an inactive index
  is mapped, then its descriptor closed. A segment costs one descriptor,
  its ``.log``.

Files written by Kafka or an older kcore may be preallocated, with a
zero-filled tail after a crash: the slots in use are found by binary
search for the first all-zero slot (entries strictly increase, so only
the unused tail is zero), then checked natively for order; the tail is
never read.

Not thread-safe: one owner (the partition's Log on its event loop, or the
loader thread opening it).
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import cast

from typing_extensions import Buffer

from kcore._native.index import ReadOnlyMapping
from kcore.log.errors import KafkaStorageError


class IndexFile(ABC):
    entry_size = 0  # set by subclasses

    def __init__(self, path: Path | str, base_offset: int, max_index_size: int,
                 appendable: bool = False):
        """Open (creating if missing) the index at ``path``: read into
        memory when ``appendable`` (the active segment), else mapped."""
        # A str: a Path per index was a measurable share of a start with
        # 10,000 partitions (pathlib parses every path it makes).
        self._file = os.fspath(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._mapping: ReadOnlyMapping | None = None
        self._image: bytearray | None = None
        self._last: tuple[int, int] | None = None  # decoded last entry, cached
        self._dirty = False  # written since the last fdatasync
        fd = self._open(os.O_RDWR | os.O_CREAT)
        try:
            self._load(fd, appendable)
        finally:
            os.close(fd)

    def _load(self, fd: int, appendable: bool) -> None:
        length = os.fstat(fd).st_size
        used = self._used_slots(fd, length // self.entry_size)
        if appendable:
            data = os.pread(fd, used * self.entry_size, 0)
            self.entries = self._valid_entries(data, used)
            self._image = bytearray(memoryview(data)[:self.entries * self.entry_size])
            self.capacity = self.max_entries
        else:
            if used:
                self._mapping = ReadOnlyMapping(fd, used * self.entry_size)
            self.entries = self._valid_entries(self.buffer, used)
            self.capacity = self.entries
        # Entries [0, _synced) are in the file as in the image; whatever
        # of its _file_length bytes lies past the entries goes at the next
        # sync.
        self._synced = self.entries
        self._file_length = length
        # Out-of-order slots among those in use, or a partial slot in a file
        # that was never preallocated: the file is damaged.
        partial = length % self.entry_size != 0 and length < self.max_index_size
        self.damaged = self.entries < used or partial

    def _used_slots(self, fd: int, slots: int) -> int:
        """Slots before the zero-filled tail of a preallocated file: all
        when the last one is non-zero (the file was trimmed or never
        preallocated), else a binary search for the first zero slot. A
        file of one slot is that slot: a time index's only entry may be
        all zeros (timestamp 0 at the base offset), later ones never are
        (timestamps strictly increase)."""
        size = self.entry_size
        if slots <= 1 or any(self._read_slot(fd, slots - 1)):
            return slots
        lo, hi = 0, slots - 1  # slot hi is zero; the answer is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if any(os.pread(fd, size, mid * size)):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _read_slot(self, fd: int, slot: int) -> bytes:
        return os.pread(fd, self.entry_size, slot * self.entry_size)

    @abstractmethod
    def _valid_entries(self, buffer, entries: int) -> int:
        """How many of the first ``entries`` entries of ``buffer`` are
        well-ordered."""

    @abstractmethod
    def entry(self, slot: int) -> tuple[int, int]:
        """Entry ``slot`` decoded, relative offset unadjusted."""

    def _last_entry(self) -> tuple[int, int] | None:
        if self._last is None and self.entries:
            self._last = self.entry(self.entries - 1)
        return self._last

    # -- state -------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._image is not None

    @property
    def max_entries(self) -> int:
        """Entries an active index may hold: ``segment.index.bytes``."""
        return self.max_index_size // self.entry_size

    @property
    def is_full(self) -> bool:
        return self.entries >= self.capacity

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    @property
    def buffer(self) -> bytearray | memoryview | bytes:
        """The entries (a mapping may hold ill-ordered slots after them)."""
        if self._image is not None:
            return self._image
        if self._mapping is None:
            return b""
        # A buffer through __getbuffer__, which the stub cannot declare on 3.11.
        return memoryview(cast(Buffer, self._mapping))

    # -- files ------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self._file)

    def _open(self, flags: int) -> int:
        try:
            return os.open(self._file, flags, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot open {self.path}: {exc}") from exc

    def _unmap(self) -> None:
        """Drop the mapping; it goes with the last view of it."""
        self._mapping = None

    def _map(self, fd: int) -> None:
        self._unmap()
        if self.entries:
            self._mapping = ReadOnlyMapping(fd, self.entries * self.entry_size)

    # -- active / inactive --------------------------------------------------------------
    def make_appendable(self) -> bytearray:
        """Make the index appendable (the active segment's state): entries
        in memory, up to ``segment.index.bytes``. Returns them."""
        if self._image is None:
            self._image = bytearray(self.buffer[:self.entries * self.entry_size])
            self._unmap()
        self.capacity = self.max_entries
        return self._image

    def trim(self) -> None:
        """Write pending entries, cut the file to them and map it read-only
        (on roll and close)."""
        fd = self._write(datasync=False)
        try:
            self._image = None
            self.capacity = self.entries
            self._map(fd)
        finally:
            os.close(fd)

    def sync(self) -> None:
        """Write entries added (and cut entries removed) since the last sync
        to the file; the page cache has them from here on."""
        if self._image is not None and (self._synced < self.entries
                                        or self._file_length != self.size_in_bytes):
            os.close(self._write(datasync=False))

    def flush(self) -> None:
        """``sync``, then fdatasync when anything was written since the
        last flush."""
        if self._dirty or (self._image is not None and self._synced < self.entries):
            os.close(self._write(datasync=True))

    def _write(self, datasync: bool) -> int:
        """Bring the file in line with the entries; returns the open fd."""
        fd = self._open(os.O_RDWR | os.O_CREAT)
        size = self.entry_size
        try:
            if self._image is not None and self._synced < self.entries:
                view = memoryview(self._image)[self._synced * size:self.entries * size]
                os.pwrite(fd, view, self._synced * size)
                self._dirty = True
            if self._file_length != self.entries * size:
                os.ftruncate(fd, self.entries * size)
                self._dirty = True
            if datasync and self._dirty:
                os.fdatasync(fd)
                self._dirty = False
        except OSError as exc:
            os.close(fd)
            raise KafkaStorageError(f"cannot write {self.path}: {exc}") from exc
        self._synced = self.entries
        self._file_length = self.entries * size
        return fd

    # -- entries ----------------------------------------------------------------------------
    def _append_entry(self, packed: bytes, decoded: tuple[int, int]) -> None:
        image = self._image if self._image is not None else self.make_appendable()
        image += packed
        self.entries += 1
        self._last = decoded

    def append_entries(self, packed: bytes) -> None:
        """Append whole entries as on disk (rebuilt by recovery), trusted
        to follow the last one in order."""
        self.make_appendable().extend(packed)
        self.entries += len(packed) // self.entry_size
        self._last = None

    def truncate_entries(self, entries: int) -> None:
        if entries < self.entries:
            del self.make_appendable()[entries * self.entry_size:]
            self._synced = min(self._synced, entries)
            self.entries = entries
            self._last = None

    def write_entries(self, packed: bytes) -> None:
        """Replace every entry with ``packed`` (whole entries, as on disk)
        and write them to the file."""
        self.truncate_entries(0)
        self.append_entries(packed)
        self.damaged = False
        self.sync()

    def rename(self, path: Path | str) -> None:
        os.replace(self._file, path)
        self._file = os.fspath(path)

    def close(self) -> None:
        """Sync pending entries and release the memory (no trim: see
        ``trim``)."""
        self.sync()
        self._unmap()
        self._image = None

    def delete(self) -> None:
        self._unmap()
        self._image = None
        try:
            os.unlink(self._file)
        except FileNotFoundError:
            pass

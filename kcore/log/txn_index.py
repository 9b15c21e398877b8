"""The aborted-transaction index of one segment: ``<base offset>.txnindex``.

Kafka's layout, 34 bytes per entry, big-endian, in marker order::

    i16 version (0) | i64 producer_id | i64 first_offset | i64 last_offset
    | i64 last_stable_offset

One entry per transaction aborted by a marker in this segment: the
producer's records from ``first_offset`` up to the marker at
``last_offset`` are aborted; ``last_stable_offset`` is the partition's LSO
once that marker was replicated. A read_committed fetch returns the entries
that overlap what it reads, and the consumer skips those producers' batches
in those ranges.

The file exists only once a segment holds an abort (most never do); the
entries are read on first use and kept (34 bytes each). Appends are
written at once and fsynced by ``flush`` (with the segment); a torn last
entry (a crash mid-write) is ignored when read and cut by the next append.
An append whose write fails (a full disk: the marker itself may still fit
in the segment's last page while a new index file needs one) keeps the
entry in memory, so read_committed fetches skip the aborted records, and
raises; ``flush`` then rewrites the whole file, and fails until it can, so
the log's recovery point never passes an entry that is not on disk.

Not thread-safe: the log's owner calls it.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

TXN_INDEX_SUFFIX = ".txnindex"
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path):
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False
        self._unwritten = False   # a write failed: the file lacks entries until flush

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = _read(self.path)
        return self._entries

    @property
    def last_offset(self) -> int:
        entries = self.entries
        return entries[-1].last_offset if entries else -1

    def append(self, entry: AbortedTxn) -> None:
        entries = self.entries
        if entries and entry.last_offset <= entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {entry.last_offset} after one "
                             f"ending at {entries[-1].last_offset}")
        entries.append(entry)
        self._dirty = True
        if self._unwritten:
            return
        try:
            with open(self.path, "ab") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size != (len(entries) - 1) * ENTRY_SIZE:
                    handle.truncate((len(entries) - 1) * ENTRY_SIZE)  # a torn entry from a crash
                handle.write(_ENTRY.pack(VERSION, *entry))
        except OSError:
            self._unwritten = True
            raise

    def collect(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Entries whose aborted range overlaps [fetch_offset, upper_offset)."""
        if upper_offset <= fetch_offset:
            return []
        return [e for e in self.entries
                if e.last_offset >= fetch_offset and e.first_offset < upper_offset]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or past ``offset`` (log truncation)."""
        entries = self.entries
        kept = [e for e in entries if e.last_offset < offset]
        if len(kept) == len(entries):
            return
        self._entries = kept
        if not kept:
            self.path.unlink(missing_ok=True)
            self._unwritten = False
            return
        if self._unwritten:
            return
        with open(self.path, "r+b") as handle:
            handle.truncate(len(kept) * ENTRY_SIZE)
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        if self._unwritten:
            self._rewrite()
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def _rewrite(self) -> None:
        """Every entry, after a failed append (OSError while it still fails)."""
        entries = self.entries
        with open(self.path, "wb") as handle:
            handle.write(b"".join(_ENTRY.pack(VERSION, *entry) for entry in entries))
        self._unwritten = False

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._entries = []


def _read(path: Path) -> list[AbortedTxn]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, *fields = _ENTRY.unpack_from(data, position)
        if version != VERSION:
            break  # not ours or torn: what follows cannot be trusted
        entries.append(AbortedTxn(*fields))
    return entries

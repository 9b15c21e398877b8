"""The group-commit journal: one file per log dir that makes the batches of
every flush.messages=1 partition durable with one write and one fdatasync
per round, instead of one fdatasync per partition file.

Why: an fdatasync of a segment file that grew must commit the file system
journal (the size changed) and writes back that file alone; with 16
partitions a round cost 16 of them (~2 ms in parallel here, ~15% of a core
in io_uring workers, most of it virtio doorbells and context switches).
The journal file is written full of zeros once, so its blocks exist and its
size never changes: an fdatasync of it is one data write plus a cache flush
(~120 us against ~250 us for a growing file;
docs/performance.md#the-reference-machine), and it carries all partitions
at once. Segment files are still written first (reads come from them, as
always) and are fsynced only at a checkpoint.

File ``<log.dir>/group-commit.journal`` (``JOURNAL_FILE``), fixed size::

    0      header slot A \\ magic "KCJ1" | u32 version 1 | u64 generation |
    512    header slot B /  u32 CRC-32C of the 16 bytes before it
    4096   entry, entry, ... (zeros or older generations after the last)

    entry: u32 size (whole entry) | u32 CRC-32C of everything after it |
           u64 generation | i64 base offset | u16 name length |
           name (the partition directory, "<topic>-<partition>") | batches

The current generation is the higher of the two valid header slots; a new
one is written to the other slot, so a torn header write leaves the old one.
Entries are read from 4096 while their CRC and generation match; the first
that does not ends the journal (torn by a crash, or left from an earlier
generation).

Checkpoint: when the next round does not fit, or before a journaled log is
deleted or truncated, every journaled log is flushed (its segment files
fsynced), then the generation moves on and writing restarts at 4096: the
old entries are then both durable in segment files and invalid.

Recovery (``replay``, at start-up after the logs are loaded and checked): an
entry whose base offset equals its log's end offset is appended again (the
crash lost it from the page cache); one below it is already there; one
above it, or for a log that no longer exists, is skipped with a warning.
The replayed logs are flushed and the journal file removed; it is created
again (in a worker thread) on the next durable append.
"""
from __future__ import annotations

import logging
import mmap
import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from typing_extensions import Buffer

from kcore._native import journal as native_journal
from kcore._native import records as native_records
from kcore.log.checkpoints import fsync_dir
from kcore.log.errors import LogError

log = logging.getLogger(__name__)

JOURNAL_FILE = "group-commit.journal"
MAGIC = b"KCJ1"
VERSION = 1
HEADER_SLOTS = (0, 512)
DATA_START = 4096
# Rounds are written in whole blocks at block offsets (O_DIRECT's rule;
# 4096 covers 512- and 4096-byte sectors).
BLOCK = 4096
# 64 MiB: a checkpoint (one fsync per journaled partition) every 64 MiB of
# durable appends, ~0.5 s at this machine's synced produce rate; writing the
# zeros once takes ~60 ms, in a worker thread.
DEFAULT_JOURNAL_BYTES = 64 << 20

_HEADER = struct.Struct(">4sIQ")      # magic, version, generation
_CRC = struct.Struct(">I")
_ENTRY = struct.Struct(">IIQqH")     # size, crc, generation, base offset, name length
_ZEROS_CHUNK = 1 << 20


class JournalError(LogError):
    """The journal file cannot be created, read or written."""


def _padding_size(end: int) -> int:
    """Bytes of the padding entry that takes a round ending at ``end`` to
    the next BLOCK boundary (a whole block more when the gap is too short
    for an entry header)."""
    gap = -end % BLOCK
    return gap if gap >= _ENTRY.size else gap + BLOCK


class RoundBuffer:
    """The entries of one round in page-aligned memory (an anonymous
    mmap), padded to whole blocks, so the journal can be written with
    O_DIRECT straight from it: no copy into the page cache, and the
    fdatasync after it has nothing to write back. Grows (rarely) by
    doubling. Entries are sealed (generation and CRC) as they are added,
    with the journal's generation at that moment; ``seal`` reseals them in
    the rare round whose generation moved on meanwhile (a checkpoint)."""

    def __init__(self, capacity: int = 4 << 20):
        self._map = mmap.mmap(-1, capacity)
        self.fill = 0
        self.starts: list[int] = []
        self.generation = -1  # of the entries in the buffer

    def __len__(self) -> int:
        return self.fill

    def padded_size(self) -> int:
        return self.fill + _padding_size(self.fill) if self.fill else 0

    def append(self, name: bytes, base_offset: int, records: Buffer, generation: int) -> None:
        """Add the entry of ``records`` (appended at ``base_offset`` to the
        partition directory ``name``, encoded), of ``generation``: entries
        already pending of an older one (added while a checkpoint ran) are
        resealed with it, since they go out in the same round."""
        start = self.fill
        self._reseal(generation)
        # Room for the entry and the largest padding entry after it.
        self._reserve(start + 2 * _ENTRY.size + len(name) + memoryview(records).nbytes + BLOCK)
        self.fill = start + native_journal.put_entry(self._map, start, name, generation,
                                                     base_offset, records)
        self.starts.append(start)

    def _reserve(self, needed: int) -> None:
        if needed <= len(self._map):
            return
        grown = mmap.mmap(-1, max(needed, 2 * len(self._map)) + (-needed % BLOCK))
        grown[:self.fill] = self._map[:self.fill]
        try:
            self._map.close()
        except BufferError:
            pass  # a finished round's view is still referenced: freed with it
        self._map = grown

    def _reseal(self, generation: int) -> None:
        if generation != self.generation:
            for start in self.starts:
                native_journal.seal_entry(self._map, start, generation)
            self.generation = generation

    def seal(self, generation: int) -> memoryview:
        """Add the padding entry and return the whole blocks to write
        (valid until ``reset``), every entry of ``generation``."""
        self._reseal(generation)
        end = self.fill
        pad = _padding_size(end)
        native_journal.put_padding(self._map, end, pad, generation)
        return memoryview(self._map)[:end + pad]

    def reset(self) -> None:
        self.fill = 0
        self.starts = []
        self.generation = -1

    def close(self) -> None:
        self._map.close()


def encode_entry(generation: int, name: str, base_offset: int, records: Buffer) -> bytearray:
    """One sealed entry, unpadded (for tests and tools)."""
    encoded_name = name.encode()
    entry = bytearray(_ENTRY.size + len(encoded_name) + memoryview(records).nbytes)
    native_journal.put_entry(entry, 0, encoded_name, generation, base_offset, records)
    return entry


def _encode_header(generation: int) -> bytes:
    head = _HEADER.pack(MAGIC, VERSION, generation)
    return head + _CRC.pack(native_records.crc32c(head))


def _read_generation(fd: int) -> int | None:
    """The current generation: the higher valid header slot, or None."""
    best = None
    for slot in HEADER_SLOTS:
        raw = os.pread(fd, _HEADER.size + _CRC.size, slot)
        if len(raw) < _HEADER.size + _CRC.size:
            continue
        magic, version, generation = _HEADER.unpack_from(raw)
        (crc,) = _CRC.unpack_from(raw, _HEADER.size)
        if magic == MAGIC and version == VERSION and crc == native_records.crc32c(raw[:_HEADER.size]):
            best = generation if best is None else max(best, generation)
    return best


class Journal:
    """An open journal file; see the module docstring. Blocking methods:
    ``create`` runs in a worker thread, ``checkpoint_header`` on the event
    loop (rare). Writes of rounds go through the syncer's backend."""

    def __init__(self, path: Path, fd: int, size: int, generation: int, direct: bool = True):
        self.path = path
        self.header_fd = fd  # buffered: header slots are 24-byte writes
        self.size = size
        self.generation = generation
        self.position = DATA_START  # where the next round is written
        # Rounds go through O_DIRECT where the file system has it (tmpfs
        # before Linux 6.6 does not): the page cache would only take a copy
        # of every round. Otherwise (or ``direct`` False) they are buffered
        # writes, made durable by the same fdatasync.
        self.direct = False
        if direct:
            try:
                self.fd = os.open(path, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
                self.direct = True
            except OSError as exc:
                log.info("%s: no O_DIRECT (%s), rounds go through the page cache", path, exc.strerror)
        if not self.direct:
            self.fd = os.dup(fd)

    @classmethod
    def create(cls, directory: Path, size: int = DEFAULT_JOURNAL_BYTES, direct: bool = True) -> Journal:
        """Write a zero-filled journal of ``size`` bytes (blocks allocated
        and written, so fdatasync later needs no metadata commit) with
        generation 1, atomically under its final name."""
        if size < DATA_START + _ZEROS_CHUNK:
            raise ValueError(f"journal size {size} is below the minimum {DATA_START + _ZEROS_CHUNK}")
        path = Path(directory) / JOURNAL_FILE
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            zeros = bytes(_ZEROS_CHUNK)
            written = 0
            while written < size:
                written += os.pwrite(fd, zeros[:min(_ZEROS_CHUNK, size - written)], written)
            os.pwrite(fd, _encode_header(1), HEADER_SLOTS[1])
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the zeros need no cache
            os.replace(temporary, path)
            fsync_dir(path.parent)
        except OSError as exc:
            os.close(fd)
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise JournalError(f"cannot create {path}: {exc.strerror}") from exc
        return cls(path, fd, size, 1, direct)

    def fits(self, nbytes: int) -> bool:
        return self.position + nbytes <= self.size

    def checkpoint_header(self) -> None:
        """Move to the next generation (blocking pwrite + fdatasync): every
        entry written so far becomes invalid. The caller has flushed every
        journaled log first."""
        generation = self.generation + 1
        try:
            os.pwrite(self.header_fd, _encode_header(generation), HEADER_SLOTS[generation % 2])
            os.fdatasync(self.header_fd)
        except OSError as exc:
            raise JournalError(f"cannot write the header of {self.path}: {exc.strerror}") from exc
        self.generation = generation
        self.position = DATA_START

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            os.close(self.header_fd)
            self.fd = self.header_fd = -1


def read_entries(path: Path) -> Iterator[tuple[str, int, bytes]]:
    """(partition directory name, base offset, batches) of every valid
    entry of the current generation, in the order written."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        generation = _read_generation(fd)
        if generation is None:
            return
        size = os.fstat(fd).st_size
        position = DATA_START
        while position + _ENTRY.size <= size:
            head = os.pread(fd, _ENTRY.size, position)
            length, crc, entry_generation, base_offset, name_length = _ENTRY.unpack(head)
            if entry_generation != generation or length < _ENTRY.size + name_length \
                    or position + length > size:
                return
            entry = os.pread(fd, length, position)
            if len(entry) != length or native_records.crc32c(memoryview(entry)[8:]) != crc:
                return
            position += length
            if name_length == 0:
                continue  # padding to a block boundary
            name_end = _ENTRY.size + name_length
            yield entry[_ENTRY.size:name_end].decode(errors="replace"), base_offset, entry[name_end:]
    finally:
        os.close(fd)


def replay(directory: Path, logs: Mapping[str, Any]) -> int:
    """Re-append what the journal in ``directory`` holds beyond each log's
    end (``logs``: partition directory name -> Log), flush those logs and
    remove the journal. Returns the number of entries appended."""
    path = Path(directory) / JOURNAL_FILE
    (path.parent / (JOURNAL_FILE + ".tmp")).unlink(missing_ok=True)
    if not path.exists():
        return 0
    applied = 0
    touched = {}
    for name, base_offset, batches in read_entries(path):
        target = logs.get(name)
        if target is None:
            log.warning("journal %s: entry for %s at offset %d has no log; skipped", path, name, base_offset)
            continue
        end = target.log_end_offset
        if base_offset < end:
            continue  # the segment file kept it
        if base_offset > end:
            log.warning("journal %s: entry for %s at offset %d is beyond its log end %d; skipped",
                        path, name, base_offset, end)
            continue
        try:
            target.append(bytearray(batches), 0, assign_offsets=False)
        except LogError as exc:
            log.warning("journal %s: entry for %s at offset %d not appended: %s", path, name, base_offset, exc)
            continue
        touched[name] = target
        applied += 1
    for target in touched.values():
        target.flush()
    path.unlink()
    fsync_dir(path.parent)
    if applied:
        log.warning("journal %s: %d entries were missing from %d logs after the crash and were "
                    "appended again", path, applied, len(touched))
    return applied

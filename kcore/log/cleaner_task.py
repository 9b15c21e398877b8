"""One compaction of one log, as a generator of small steps.

What a pass does (Kafka ``Cleaner.doClean``):

1. Producer scan: a header walk over every segment below the first
   uncleanable offset notes each producer id's last batch. A batch whose
   records are all removed is dropped, unless it is its producer's last one
   in that range: then its header stays, empty, so the producer's sequence
   numbers (and an open transaction) replay after a restart (Kafka keeps the
   last batch of each active producer; keeping the last one in the range is
   the same or one empty header more).
2. Offset map over the dirty section [first_dirty_offset, end): key -> the
   offset of its latest record. Records of a transaction enter the map at
   its COMMIT marker; aborted ones, and those whose marker lies past the
   section, never do (so they never hide a visible record). The map stops
   at a segment boundary once it holds ``max_map_entries`` keys; the pass
   then ends there and the next one goes on.
3. Every segment below ``end`` is rewritten, groups of neighbours whose
   sizes sum to at most segment.bytes merged into one, into
   ``<base>.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned``).
   A record stays when it has a key, is the latest for it (keys absent from
   the map stay) and is not a tombstone past its delete horizon. Records of
   aborted transactions (the segments' ``.txnindex``) go whatever their
   keys; only the header of a producer's last batch stays. Retained
   batches keep their offsets (cleaner_records.py); a batch left unchanged
   is copied as it was.
4. The files are checked (native recovery scan, which also builds the
   indexes), fsynced, and swapped in by ``Log.replace_segments``
   (``.cleaned`` -> ``.swap`` -> final names; loader.py completes or
   drops an interrupted swap).

Delete horizon (KIP-534, not the older segment-mtime rule): the first pass
that retains a tombstone or a transaction marker stamps its batch with
horizon = now + delete.retention.ms (attribute bit 6, baseTimestamp); a
later pass at or after the horizon drops the tombstones, and drops the
marker when its transaction kept no record and it is not its producer's
last batch. The horizon travels with the batch, so it survives restarts.
Control batches are never merged with anything: every batch is rewritten
on its own, so producer ids, epochs and sequences never mix.

Concurrency contract: ``steps()`` runs on the thread that owns the Log
(the event loop) and yields ``None`` after each batch, so a driver can
interleave other work; it yields an ``Offload`` for blocking I/O (native
scan, fsync) that touches only the task's own ``.cleaned`` files and may run
in a worker thread; the driver sends its result back. The task reads the
segments through its own duplicated file descriptors, so retention or
truncation running between steps cannot pull a file from under it; the
swap checks that the segments it replaces are still the log's, unchanged,
and abandons the pass (CleaningAbortedError) if not.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kcore._native import segment as native_segment
from kcore._native.batch_layout import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CURRENT_MAGIC,
    DELETE_HORIZON_FLAG_MASK,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
)
from kcore._native.records import BatchHeader, crc32c, parse_batch_header
from kcore.log.cleaner_records import (
    build_batch,
    empty_batch,
    filter_records,
    index_keys,
    rebase_timestamps,
    records_section,
)
from kcore.log.errors import KafkaStorageError
from kcore.log.log import CLEANED_SUFFIX, Log
from kcore.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment, segment_name
from kcore.protocol.compression import max_decompressed_size
from kcore.protocol.constants import INT32_MAX
from kcore.protocol.records import ControlType, RecordBatch

# Keys in the offset map before a pass stops at the next segment boundary.
# A dict entry with a ~16-byte key costs ~120 bytes here, so 2M keys are
# ~250 MB, the order of Kafka's 128 MiB dedupe buffer at 24 bytes a key
# (log.cleaner.dedupe.buffer.size, which holds ~5M keys).
MAX_MAP_ENTRIES = 2_000_000
# Segment reads: 1 MiB preads (a batch larger than that is read whole).
READ_CHUNK = 1 << 20
# Output is written to the .cleaned file in 1 MiB pwrites.
WRITE_CHUNK = 1 << 20
# Batch headers fetched per native call in the producer scan.
HEADER_WALK_BATCHES = 4096


class CleaningAbortedError(Exception):
    """The log changed under the pass (truncated, segments deleted or
    closed); nothing was swapped for the group in progress."""


class UnreadableBatchError(Exception):
    """A batch whose records cannot be read (corrupt, or inflating past the
    decompression limit): the log is left as it is."""


class Offload(NamedTuple):
    """Blocking work the driver runs where it likes (a worker thread):
    ``function(*args)``; its return value is sent back into the steps."""

    function: Callable[..., Any]
    args: tuple


@dataclass
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    batches_read: int = 0
    batches_written: int = 0
    map_records: int = 0
    map_bytes: int = 0
    groups: int = 0
    segments: int = 0
    elapsed_s: float = 0.0


@dataclass
class CleanResult:
    """How a pass ended. ``end_offset`` is the next first dirty offset when
    ``completed``; ``next_delete_horizon_ms`` the earliest horizon of a
    retained tombstone or marker (when another pass will remove something)."""

    first_dirty_offset: int
    end_offset: int
    completed: bool
    next_delete_horizon_ms: int | None
    stats: CleanerStats = field(default_factory=CleanerStats)


class CleaningTask:
    """See the module docstring. Build on the Log's thread; then drive
    ``steps()`` with ``run_steps`` or an asynchronous driver."""

    def __init__(self, log: Log, first_dirty_offset: int, first_uncleanable_offset: int,
                 now_ms: int, *, max_map_entries: int = MAX_MAP_ENTRIES):
        self.log = log
        self.config = log.config
        self.now_ms = now_ms
        self.first_dirty_offset = first_dirty_offset
        self.max_map_entries = max_map_entries
        everything = log.segments
        count = sum(1 for s in everything[:-1] if s.base_offset < first_uncleanable_offset)
        self.segments: list[LogSegment] = everything[:count]
        self.sizes = [s.size for s in self.segments]
        # Where each segment's offsets end: the next segment's base offset.
        self.ends = [s.base_offset for s in everything[1:count + 1]]
        self.stats = CleanerStats()
        self._offset_map: dict[bytes, int] = {}
        self._producer_last_offsets: dict[int, int] = {}
        self._txn_has_data: dict[int, bool] = {}
        # producer id -> (first offset, marker offset) of its aborted transactions.
        self._aborted: dict[int, list[tuple[int, int]]] = {}
        for txn in log.collect_aborted_txns(log.log_start_offset, first_uncleanable_offset):
            self._aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        self._next_horizon: int | None = None
        self._count = 0  # segments this pass covers, from the first
        self._fds: list[int] = []
        try:
            for segment in self.segments:
                self._fds.append(os.dup(segment.fd))
        except OSError as exc:
            self._close()
            raise KafkaStorageError(f"cannot open {log.dir} for cleaning: {exc}") from exc

    # -- the pass ------------------------------------------------------------------------
    def steps(self) -> Generator[Offload | None, Any, CleanResult]:
        started = time.monotonic()
        end_offset, completed = self.first_dirty_offset, True
        try:
            yield from self._scan_producers()
            self._count = yield from self._build_offset_map()
            if self._count:
                end_offset = self.ends[self._count - 1]
            for group in self._group_segments(self._count):
                yield from self._clean_group(group)
        except CleaningAbortedError:
            completed = False
        finally:
            self._close()
        self.stats.elapsed_s = time.monotonic() - started
        return CleanResult(self.first_dirty_offset, end_offset, completed, self._next_horizon,
                           self.stats)

    def _close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    # -- reading ---------------------------------------------------------------------------
    def _batches(self, index: int, start: int = 0) -> Iterator[tuple[bytes, BatchHeader]]:
        """Each whole batch of segment ``index`` with its header, CRC checked."""
        fd, size = self._fds[index], self.sizes[index]
        buffer, buffer_start, position = b"", 0, start
        while position < size:
            at = position - buffer_start
            if len(buffer) - at < BATCH_HEADER_SIZE:
                buffer, buffer_start, at = os.pread(fd, min(READ_CHUNK, size - position), position), position, 0
            batch_size = int.from_bytes(buffer[at + LENGTH_OFFSET:at + LENGTH_OFFSET + 4], "big",
                                        signed=True) + LOG_OVERHEAD
            if batch_size < BATCH_HEADER_SIZE or position + batch_size > size:
                raise self._corrupt(index, position, "batch length")
            if len(buffer) - at < batch_size:
                buffer = os.pread(fd, max(batch_size, min(READ_CHUNK, size - position)), position)
                buffer_start, at = position, 0
            batch = buffer[at:at + batch_size]
            header = parse_batch_header(batch, 0)
            if header.magic != CURRENT_MAGIC or crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]) != header.crc:
                raise self._corrupt(index, position, "magic or CRC-32C")
            self.stats.bytes_read += batch_size
            yield batch, header
            position += batch_size

    def _corrupt(self, index: int, position: int, what: str) -> Exception:
        if self._changed(index):
            return CleaningAbortedError(f"{self.segments[index].log_path} changed during cleaning")
        return KafkaStorageError(f"{self.segments[index].log_path}: bad {what} at position "
                                 f"{position}; not cleaning this log")

    def _records_section(self, batch: bytes, header: BatchHeader) -> bytes:
        """The batch's records, decompressed to at most 64 times
        max.message.bytes; a batch that cannot be read stops this log's
        cleaning (Kafka marks such a log uncleanable) rather than losing it."""
        try:
            return records_section(batch, header.attributes,
                                   max_decompressed_size(self.config.max_message_bytes))
        except ValueError as exc:
            raise UnreadableBatchError(f"{self.log.dir}: batch at offset {header.base_offset}: "
                                       f"{exc}; not cleaning this log") from exc

    def _scan_producers(self) -> Generator[None, Any, None]:
        for index, fd in enumerate(self._fds):
            position, size = 0, self.sizes[index]
            while position < size:
                headers, position = native_segment.batch_headers(fd, position, size,
                                                                 HEADER_WALK_BATCHES)
                if not headers:
                    break
                for _, raw in headers:
                    header = parse_batch_header(raw)
                    if header.producer_id >= 0:
                        self._producer_last_offsets[header.producer_id] = header.last_offset
                yield None

    def _build_offset_map(self) -> Generator[None, Any, int]:
        """Fill the offset map from the dirty section; returns how many
        segments (from the first) this pass covers."""
        first_dirty = self.first_dirty_offset
        pending: dict[int, dict[bytes, int]] = {}
        offset_map = self._offset_map
        scanned = 0
        for index in range(len(self.segments)):
            if self.ends[index] <= first_dirty:
                continue
            if scanned and len(offset_map) >= self.max_map_entries:
                return index
            scanned += 1
            for batch, header in self._batches(index):
                if header.last_offset < first_dirty:
                    continue
                if header.is_control:
                    keys = pending.pop(header.producer_id, None)
                    if keys and RecordBatch(batch).control_type is ControlType.COMMIT:
                        for key, offset in keys.items():
                            if offset > offset_map.get(key, -1):
                                offset_map[key] = offset
                    continue
                section = self._records_section(batch, header)
                target = (pending.setdefault(header.producer_id, {})
                          if header.is_transactional else offset_map)
                self.stats.map_records += index_keys(section, header.base_offset, target)
                self.stats.map_bytes += header.size_in_bytes
                yield None
        return len(self.segments)

    def _group_segments(self, count: int) -> list[list[int]]:
        """Consecutive segments merged while their total size fits
        segment.bytes, their indexes fit segment.index.bytes and their
        offsets fit the int32 relative offsets (Kafka ``groupSegmentsBySize``)."""
        max_size = self.config.segment_bytes
        max_index = self.config.segment_index_bytes
        groups, index = [], 0
        while index < count:
            group = [index]
            base = self.segments[index].base_offset
            size = self.sizes[index]
            index_bytes = self.segments[index].offset_index.size_in_bytes
            time_bytes = self.segments[index].time_index.size_in_bytes
            index += 1
            while index < count:
                segment = self.segments[index]
                if (size + self.sizes[index] > max_size
                        or index_bytes + segment.offset_index.size_in_bytes > max_index
                        or time_bytes + segment.time_index.size_in_bytes > max_index
                        or self.ends[index] - 1 - base > INT32_MAX):
                    break
                size += self.sizes[index]
                index_bytes += segment.offset_index.size_in_bytes
                time_bytes += segment.time_index.size_in_bytes
                group.append(index)
                index += 1
            groups.append(group)
        return groups

    # -- rewriting ---------------------------------------------------------------------------
    def _clean_group(self, group: list[int]) -> Generator[Offload | None, Any, None]:
        base = self.segments[group[0]].base_offset
        stem = self.log.dir / segment_name(base)
        paths = [stem.with_name(stem.name + suffix + CLEANED_SUFFIX)
                 for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)]
        fd = os.open(paths[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            written = yield from self._write_group(fd, group)
            mtime_ns = max(os.fstat(self._fds[i]).st_mtime_ns for i in group)
            yield Offload(finish_cleaned_segment,
                          (fd, base, written, self.config.index_interval_bytes,
                           str(paths[1]), str(paths[2]), mtime_ns))
            self._swap(group, base)
        except BaseException:
            for path in paths:
                path.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        self.stats.groups += 1
        self.stats.segments += len(group)
        self.stats.bytes_written += written

    def _write_group(self, fd: int, group: list[int]) -> Generator[None, Any, int]:
        out, written = bytearray(), 0
        for index in group:
            for batch, header in self._batches(index):
                kept = self._clean_batch(batch, header)
                if kept is not None:
                    out += kept
                    self.stats.batches_written += 1
                    if len(out) >= WRITE_CHUNK:
                        written += _write_all(fd, out, written)
                        out = bytearray()
                yield None
        if out:
            written += _write_all(fd, out, written)
        return written

    def _changed(self, index: int) -> bool:
        segment = self.segments[index]
        return segment.deleted or segment.fd < 0 or segment.size != self.sizes[index]

    def _swap(self, group: list[int], base: int) -> None:
        # The offset map came from every segment of the pass: if any not yet
        # swapped changed (truncated, deleted), the map may be stale.
        for index in range(group[0], self._count):
            if self._changed(index):
                raise CleaningAbortedError(
                    f"{self.segments[index].log_path} changed during cleaning")
        try:
            self.log.replace_segments(base, [self.segments[i] for i in group])
        except ValueError as exc:
            raise CleaningAbortedError(str(exc)) from exc

    def _clean_batch(self, batch: bytes, header: BatchHeader) -> bytes | bytearray | None:
        self.stats.batches_read += 1
        if header.is_control:
            return self._clean_control_batch(batch, header)
        producer_id = header.producer_id
        if header.is_transactional and self._is_aborted(producer_id, header.base_offset):
            self.stats.records_read += header.records_count
            if self._producer_last_offsets.get(producer_id) == header.last_offset:
                return empty_batch(header)
            return None
        horizon = header.delete_horizon_ms
        drop_tombstones = horizon is not None and self.now_ms >= horizon
        section = self._records_section(batch, header)
        kept = filter_records(section, header.base_offset, self._offset_map, drop_tombstones)
        self.stats.records_read += kept.total
        self.stats.records_retained += kept.retained
        if not kept.retained:
            if producer_id >= 0 and self._producer_last_offsets.get(producer_id) == header.last_offset:
                if header.is_transactional:
                    self._txn_has_data[producer_id] = True
                return empty_batch(header)
            return None
        if header.is_transactional:
            self._txn_has_data[producer_id] = True
        stamp = kept.tombstones > 0 and horizon is None
        if kept.tombstones:
            horizon = self.now_ms + self.config.delete_retention_ms if horizon is None else horizon
            self._note_horizon(horizon)
        if kept.retained == kept.total and not stamp:
            return batch
        if len(kept.runs) == 1:
            records: bytes | bytearray = section[kept.runs[0][0]:kept.runs[0][1]]
        else:
            records = b"".join([section[start:end] for start, end in kept.runs])
        if not stamp or horizon is None:
            return build_batch(header, records, kept.retained, header.attributes,
                               header.base_timestamp)
        records = rebase_timestamps(records, header.base_timestamp - horizon)
        return build_batch(header, records, kept.retained, header.attributes | DELETE_HORIZON_FLAG_MASK,
                           horizon)

    def _is_aborted(self, producer_id: int, offset: int) -> bool:
        return any(first <= offset <= last for first, last in self._aborted.get(producer_id, ()))

    def _clean_control_batch(self, batch: bytes, header: BatchHeader) -> bytes | bytearray | None:
        producer_id = header.producer_id
        had_data = self._txn_has_data.pop(producer_id, False)
        horizon = header.delete_horizon_ms
        is_last = self._producer_last_offsets.get(producer_id) == header.last_offset
        if horizon is not None and self.now_ms >= horizon:
            return None if not had_data and not is_last else batch
        if horizon is not None:
            self._note_horizon(horizon)
            return batch
        horizon = self.now_ms + self.config.delete_retention_ms
        self._note_horizon(horizon)
        section = self._records_section(batch, header)
        records = rebase_timestamps(section, header.base_timestamp - horizon)
        return build_batch(header, records, header.records_count,
                           header.attributes | DELETE_HORIZON_FLAG_MASK, horizon)

    def _note_horizon(self, horizon: int) -> None:
        if self._next_horizon is None or horizon < self._next_horizon:
            self._next_horizon = horizon


def _write_all(fd: int, data: bytes | bytearray, position: int) -> int:
    view = memoryview(data)
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], position + done)
    return done


def finish_cleaned_segment(fd: int, base_offset: int, size: int, index_interval_bytes: int,
                           index_path: str, time_index_path: str, mtime_ns: int) -> int:
    """Check a written ``.cleaned`` segment with the recovery scan, write
    the indexes it builds, fsync all three files and give the log the last
    modification time of the segments it replaces (what retention falls
    back on for batches without timestamps). Returns the batch count.
    Blocking: meant for a worker thread; touches only these files."""
    (end, _, _, _, batches, index_entries, time_entries,
     stop) = native_segment.scan_segment(fd, base_offset, size, index_interval_bytes)
    if end != size or stop is not None:
        raise KafkaStorageError(f"cleaned segment {base_offset} fails its check at "
                                f"position {end}: {stop}")
    for path, entries in ((index_path, index_entries), (time_index_path, time_entries)):
        index_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(index_fd, entries, 0)
            os.fsync(index_fd)
        finally:
            os.close(index_fd)
    os.fsync(fd)
    os.utime(fd, ns=(mtime_ns, mtime_ns))
    return batches


def run_steps(steps: Generator[Offload | None, Any, Any]) -> Any:
    """Drive ``steps`` to the end on this thread (offloads run inline)."""
    value = None
    while True:
        try:
            request = steps.send(value)
        except StopIteration as stop:
            return stop.value
        value = None
        if request is not None:
            try:
                value = request.function(*request.args)
            except BaseException:
                steps.close()
                raise

"""One log segment: ``<base_offset>.log`` with its ``.index`` and ``.timeindex``.

Files (Kafka's layout; the name is the base offset as 20 digits)::

    00000000000000001234.log        RecordBatch v2 after RecordBatch v2
    00000000000000001234.index      sparse offset index (offset_index.py)
    00000000000000001234.timeindex  sparse time index (time_index.py)
    00000000000000001234.txnindex   aborted transactions (txn_index.py; only once one is)

The ``.log`` is appended with pwrite at the tracked size (preallocated when
``preallocate`` is set, so its file length may exceed the data). Offsets
inside are stored absolute; index entries are relative to the base offset,
hence the int32 limit on ``last offset - base offset``. Suffix ``.deleted``
marks files waiting for removal. Source: Kafka ``LogSegment``.

An inactive segment opened at start is lazy (Kafka ``LazyIndex``): only
its ``.log`` is opened; the indexes are mapped, sanity-checked (and
rebuilt from the log when they fail) and the state past the last index
entry read on first use, so a broker with many old segments starts in
time proportional to its active segments and holds one descriptor per
segment.

Not thread-safe: one owner (the partition's Log, on one event loop, or the
loader thread opening it). The file descriptor outlives a deletion request
by ``file.delete.delay.ms`` so that slices handed to in-flight fetches stay
readable.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import NamedTuple

from kcore._native import append as native_append
from kcore._native import index as native_index
from kcore._native import records as native_records
from kcore._native import segment as native_segment
from kcore.log.config import LogConfig
from kcore.log.errors import CorruptRecordError, KafkaStorageError
from kcore.log.file_slice import FileSlice
from kcore.log.offset_index import OffsetIndex
from kcore.log.time_index import TimeIndex
from kcore.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from kcore.protocol import records as record_codec
from kcore.protocol.compression import max_decompressed_size

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)

log = logging.getLogger(__name__)

# Appends reserve the blocks ahead of them (fallocate with KEEP_SIZE: the
# length readers and recovery trust does not change), which takes ext4's
# per-page delayed-allocation work (reservation, extent-status and quota
# updates) off the writes. Measured here, system CPU to write 1 GiB and
# whole-machine CPU with its writeback: 400 KiB appends 0.24 s plain, 0.17 s
# reserved (0.30 against 0.25 s); 64 KiB appends 0.23 against 0.19 s.
# A fallocate costs ~10-20 us whatever its length, so a chunk is 16 appends:
# at 22 KiB appends (a producer's batch at 50k msg/s) chunks of 4 appends
# cost 10.3 us of process CPU per append against 10.6 unreserved, chunks of
# 16 cost 9.3 (13.4 us of the machine's against 15.6 with writeback). Within
# these bounds a quiet partition holds at most 64 KiB past its data and a
# busy one 1 MiB, until its roll or close gives them back.
_RESERVE_MIN = 64 << 10
_RESERVE_MAX = 1 << 20
_RESERVE_APPENDS = 16


class ScanStart(NamedTuple):
    """Where recovery resumes in a segment: the batch boundary of the last
    trusted offset-index entry and the state of the prefix before it (the
    arguments of ``scan_segment`` after ``index_interval_bytes``)."""

    position: int
    max_timestamp: int
    offset_of_max_timestamp: int
    last_time_index_timestamp: int


FROM_START = ScanStart(0, -1, -1, -1)


class Recovery(NamedTuple):
    """What ``LogSegment.recover`` did: the bytes it cut off the end, why
    ('size', 'crc', ... or None), and the position its check started at."""

    bytes_removed: int
    reason: str | None
    start_position: int


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    """A segment opened on its files. Build with ``create`` or ``open``."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, *, fresh: bool,
                 lazy: bool = False, indexes_present: bool | None = None):
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        # Paths as str: pathlib parses every Path it makes, a measurable
        # share of a start with 10,000 partitions.
        self._stem = os.path.join(directory, segment_name(base_offset))
        self._log_file = self._stem + LOG_SUFFIX
        self.deleted = False
        flags = os.O_RDWR | os.O_CREAT | (os.O_EXCL if fresh else 0)
        try:
            self.fd = os.open(self._log_file, flags, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot open {self.log_path}: {exc}") from exc
        self.size = 0 if fresh else os.fstat(self.fd).st_size
        self.written_back = self.size  # where write-behind (writeback.py) took the appends to
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._txn_index: TransactionIndex | None = None
        self.index_missing = False
        self._next_offset: int | None = None  # None: not read yet (lazy)
        self._max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None
        self.bytes_since_last_index_entry = 0
        self.created_ms = int(time.time() * 1000)
        self.tail_damaged = False
        self._reserve_end = 0  # the next append past here reserves again
        self._reserved = False  # blocks past the data may be held
        if not lazy:
            try:
                self._open_indexes(appendable=True, present=True if fresh else indexes_present)
            except BaseException:
                os.close(self.fd)
                if fresh:  # O_EXCL: the file is ours; a later roll must be able to create it
                    _unlink(self._log_file)
                    _unlink(self._index_path(INDEX_SUFFIX))
                raise
            if fresh:
                self._next_offset = base_offset

    @property
    def log_path(self) -> Path:
        return Path(self._log_file)

    @property
    def txn_index(self) -> TransactionIndex:
        """Made on first use: most segments never hold an abort, and the
        object costs nothing until it reads its (usually absent) file."""
        if self._txn_index is None:
            self._txn_index = TransactionIndex(Path(self._index_path(TXN_INDEX_SUFFIX)))
        return self._txn_index

    def _index_path(self, suffix: str) -> str:
        return self._stem + suffix + (DELETED_SUFFIX if self.deleted else "")

    def _open_indexes(self, appendable: bool,
                      present: bool | None = None) -> tuple[OffsetIndex, TimeIndex]:
        """Open both indexes; ``present``: whether both files exist, when
        the caller knows (None: look)."""
        index_path, time_path = self._index_path(INDEX_SUFFIX), self._index_path(TIME_INDEX_SUFFIX)
        if present is None:
            present = os.path.exists(index_path) and os.path.exists(time_path)
        self.index_missing = not present
        try:
            offset_index = OffsetIndex(index_path, self.base_offset, self.config.segment_index_bytes,
                                       appendable)
            try:
                time_index = TimeIndex(time_path, self.base_offset, self.config.segment_index_bytes,
                                       appendable)
            except BaseException:
                offset_index.close()
                raise
        except OSError as exc:
            raise KafkaStorageError(f"cannot open the indexes of {self.log_path}: {exc}") from exc
        self._offset_index, self._time_index = offset_index, time_index
        return offset_index, time_index

    # -- lazy parts (Kafka LazyIndex) ------------------------------------------------
    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            return self._load_lazily()[0]
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            return self._load_lazily()[1]
        return self._time_index

    def _load_lazily(self) -> tuple[OffsetIndex, TimeIndex]:
        """First use of an old segment: map its indexes, read the state
        past their last entry, and rebuild them from the log when they
        fail the sanity check."""
        indexes = self._open_indexes(appendable=False)
        self._load_state()
        if self.needs_rebuild():
            log.warning("%s: rebuilding the indexes of an old segment (missing or failing their "
                        "sanity check)", self.log_path)
            self._rebuild_indexes()
        return indexes

    @property
    def next_offset(self) -> int:
        """The offset after the segment's last batch (its base offset when
        empty)."""
        if self._next_offset is None:
            self._load_lazily()
            assert self._next_offset is not None
        return self._next_offset

    @next_offset.setter
    def next_offset(self, value: int) -> None:
        self._next_offset = value

    @property
    def max_timestamp(self) -> int:
        if self._next_offset is None:
            self._load_lazily()
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        if self._next_offset is None:
            self._load_lazily()
        return self._offset_of_max_timestamp

    def _set_max_timestamp(self, timestamp: int, offset: int) -> None:
        self._max_timestamp, self._offset_of_max_timestamp = timestamp, offset

    # -- construction ------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig) -> LogSegment:
        """A new, empty, active segment."""
        segment = cls(directory, base_offset, config, fresh=True)
        if config.preallocate:
            try:
                os.posix_fallocate(segment.fd, 0, config.segment_bytes)
            except OSError as exc:
                # E.g. a full disk: leave nothing behind, so the next roll can retry.
                segment.delete_files()
                raise KafkaStorageError(f"cannot create {segment.log_path}: {exc}") from exc
        return segment

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig,
             lazy: bool = False, indexes_present: bool | None = None) -> LogSegment:
        """An existing segment, trusted as cleanly written: its state is read
        from the indexes and the batch headers after the last index entry
        (on first use when ``lazy``: an inactive segment). Call
        ``needs_rebuild`` then ``recover`` when it may not be trusted.
        ``indexes_present``: whether both index files exist, when the
        caller listed the directory."""
        segment = cls(directory, base_offset, config, fresh=False, lazy=lazy,
                      indexes_present=indexes_present)
        if not lazy:
            segment._load_state()
        return segment

    def _load_state(self) -> None:
        offset_index, time_index = self.offset_index, self.time_index
        last_offset, last_position = offset_index.last_entry()
        if last_position > self.size:
            last_position = 0
        end, batches, next_offset, max_ts, max_ts_offset = native_segment.walk_headers(
            self.fd, last_position, self.size)
        self.tail_damaged = end < self.size
        self.size = end
        self._next_offset = next_offset if batches else (
            last_offset + 1 if offset_index.entries else self.base_offset)
        self._set_max_timestamp(*time_index.last_entry())
        if batches and (max_ts > self._max_timestamp or not time_index.entries):
            self._set_max_timestamp(max_ts, max_ts_offset)
        self.bytes_since_last_index_entry = self.size - last_position
        self._load_rolling_timestamp()

    def _load_rolling_timestamp(self) -> None:
        headers, _ = native_segment.batch_headers(self.fd, 0, self.size, 1)
        self.rolling_based_timestamp = (
            native_records.parse_batch_header(headers[0][1]).max_timestamp if headers else None)

    def needs_rebuild(self) -> bool:
        """True when the indexes are missing or fail the sanity check: the
        last offset-index entry must point at a batch boundary holding that
        offset, and no entry may lie past the data."""
        offset_index, time_index = self.offset_index, self.time_index
        if self.index_missing or self.tail_damaged or offset_index.damaged or time_index.damaged:
            return True
        offset, position = offset_index.last_entry()
        if offset_index.entries:
            try:
                found = native_segment.find_batch(self.fd, position, self.size, offset)
            except ValueError:
                return True
            if found is None or found[0] != position or found[3] != offset:
                return True
        _, time_offset = time_index.last_entry()
        return time_offset >= max(self.next_offset, self.base_offset + 1)

    # -- recovery ---------------------------------------------------------------------
    def recover(self, recovery_point: int = 0) -> Recovery:
        """Check the batches past ``recovery_point`` (size, CRC, offsets),
        truncate the file at the first torn or corrupt one and rebuild the
        index entries they need. The scan starts at the last offset-index
        entry below the recovery point whose batch the data confirms:
        everything before it was fsynced (with its index entries) before
        the recovery point moved, so a restart costs what was unflushed,
        never a scan of the whole segment."""
        file_size = os.fstat(self.fd).st_size
        start = self._scan_start(recovery_point, file_size)
        scan = self._scan(start, file_size)
        if start.position and scan[4] == 0 and scan[7] is not None:
            # The trusted entry's own batch is damaged: check everything.
            start = self._scan_start(self.base_offset, file_size)
            scan = self._scan(start, file_size)
        end, next_offset, max_ts, max_ts_offset, batches, index_entries, time_entries, stop = scan
        if end < file_size:
            try:
                os.ftruncate(self.fd, end)
            except OSError as exc:
                raise KafkaStorageError(f"cannot truncate {self.log_path}: {exc}") from exc
        self.txn_index.truncate_to(next_offset)
        self._apply_scan(start, scan)
        return Recovery(file_size - end, stop, start.position)

    def _scan_start(self, recovery_point: int, file_size: int) -> ScanStart:
        """Keep the index entries below ``recovery_point`` up to one whose
        batch the data confirms, drop the rest; where to scan from."""
        offset_index, time_index = self.offset_index, self.time_index
        slot = -1
        if recovery_point > self.base_offset and not (offset_index.damaged or time_index.damaged):
            slot = native_index.offset_index_lookup(offset_index.buffer, offset_index.entries,
                                                    recovery_point - 1 - self.base_offset)
        while slot >= 0 and not self._confirms(*offset_index.entry(slot), file_size):
            slot -= 1
        offset_index.truncate_entries(slot + 1)
        if slot < 0:
            time_index.truncate_entries(0)
            return FROM_START
        relative, position = offset_index.entry(slot)
        time_index.truncate_to(self.base_offset + relative + 1)
        timestamp, offset = time_index.last_entry()
        if not time_index.entries:
            return ScanStart(position, -1, -1, -1)
        return ScanStart(position, timestamp, offset, timestamp)

    def _confirms(self, relative: int, position: int, file_size: int) -> bool:
        """The index entry names a batch boundary holding its offset."""
        offset = self.base_offset + relative
        try:
            found = native_segment.find_batch(self.fd, position, file_size, offset, offset)
        except ValueError:
            return False
        return found is not None and found[0] == position

    def _scan(self, start: ScanStart, end_position: int) -> tuple:
        try:
            return native_segment.scan_segment(self.fd, self.base_offset, end_position,
                                               self.config.index_interval_bytes, *start)
        except OSError as exc:
            raise KafkaStorageError(f"cannot read {self.log_path}: {exc}") from exc

    def _apply_scan(self, start: ScanStart, scan: tuple) -> None:
        """Take the state and index entries of a scan from ``start``."""
        end, next_offset, max_ts, max_ts_offset, batches, index_entries, time_entries, _ = scan
        self.size = end
        self.offset_index.append_entries(index_entries)
        self.time_index.append_entries(time_entries)
        self.index_missing = self.tail_damaged = False
        self.offset_index.damaged = self.time_index.damaged = False
        self._next_offset = next_offset
        if batches or start.offset_of_max_timestamp >= 0:
            self._set_max_timestamp(max_ts, max_ts_offset)
        else:
            self._set_max_timestamp(-1, self.base_offset)
        last_position = self.offset_index.last_entry()[1]
        self.bytes_since_last_index_entry = end - last_position
        self._load_rolling_timestamp()

    def _rebuild_indexes(self) -> None:
        """Rebuild both indexes of a trusted segment from its data, which
        must be whole: corrupt data in a segment the log relies on is a
        storage error, never cut here."""
        active = self.offset_index.active
        size = os.fstat(self.fd).st_size  # self.size may be a damaged index's guess
        scan = self._scan(FROM_START, size)
        if scan[0] != size or scan[7] is not None:
            raise KafkaStorageError(
                f"{self.log_path}: corrupt data ({scan[7]}) at position {scan[0]} of {size}, "
                f"found while rebuilding its indexes")
        self.offset_index.truncate_entries(0)
        self.time_index.truncate_entries(0)
        self._apply_scan(FROM_START, scan)
        for index in (self.offset_index, self.time_index):
            index.sync() if active else index.trim()

    # -- append ------------------------------------------------------------------------
    def append(self, records, batches: list[tuple[int, int, int, int]],
               verify: bool = False) -> None:
        """Write ``records`` (whole batches) at the end and index them.
        ``batches``: (position in records, size, last_offset, max_timestamp).
        ``verify``: check each batch's CRC (and header) natively while
        writing; a bad batch raises CorruptRecordError and leaves the
        segment as it was."""
        position = self.size
        if position + len(records) > self._reserve_end and not self.config.preallocate:
            self._reserve(position, len(records))
        if verify:
            self._write_verified(records, position)
        else:
            self._write_all(records, position)
        interval = self.config.index_interval_bytes
        for batch_position, size, last_offset, max_timestamp in batches:
            if max_timestamp > self._max_timestamp or position + batch_position == 0:
                self._set_max_timestamp(max_timestamp, last_offset)
            if self.bytes_since_last_index_entry > interval:
                self.offset_index.append(last_offset, position + batch_position)
                self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += size
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = batches[0][3]
        self.size = position + len(records)
        self.next_offset = batches[-1][2] + 1

    def _reserve(self, position: int, length: int) -> None:
        """Reserve the blocks of the next appends. Where it fails (a full
        disk, a file system without fallocate) the appends allocate as they
        go and report any real error; the next chunk tries again."""
        length = max(length, min(_RESERVE_MAX, max(_RESERVE_MIN, _RESERVE_APPENDS * length)))
        if native_append.reserve_space(self.fd, position, length) == 0:
            self._reserved = True
        self._reserve_end = position + length

    def _write_all(self, records, position: int) -> None:
        written = 0
        try:
            written = os.pwrite(self.fd, records, position)
            if written == len(records):
                return
            view = memoryview(records).cast("B")
            while written < len(view):
                written += os.pwrite(self.fd, view[written:], position + written)
        except OSError as exc:
            if written:
                self._cut_back(position)
            raise KafkaStorageError(f"cannot append to {self.log_path}: {exc}") from exc

    def _write_verified(self, records, position: int) -> None:
        try:
            failure = native_append.append_batches(self.fd, records, position)
        except OSError as exc:
            self._cut_back(position)
            raise KafkaStorageError(f"cannot append to {self.log_path}: {exc}") from exc
        if failure is not None:
            reason, batch_position, written = failure
            if written:
                self._cut_back(position)
            raise CorruptRecordError(
                reason, f"corrupt record batch at position {batch_position}: {reason}",
                batch_position)

    def _cut_back(self, position: int) -> None:
        """Remove bytes written past ``position`` by a failed append (they
        were never part of the segment), keeping the preallocated length."""
        os.ftruncate(self.fd, position)
        if self.config.preallocate and position < self.config.segment_bytes:
            try:
                os.posix_fallocate(self.fd, position, self.config.segment_bytes - position)
            except OSError:
                pass  # e.g. the disk is full: appends extend the file instead

    # -- reads ---------------------------------------------------------------------------
    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, int, int, int] | None:
        """(position, size, base_offset, last_offset) of the first batch whose
        last offset is >= ``offset``, or None past the segment's end."""
        try:
            return self._find_batch(offset, start_position)
        except ValueError as exc:
            # The index disagrees with the data: rebuild it, never trust it.
            log.warning("%s: rebuilding its indexes: %s", self.log_path, exc)
            self._rebuild_indexes()
        try:
            return self._find_batch(offset, start_position)
        except ValueError as exc:
            raise KafkaStorageError(f"{self.log_path}: {exc}") from exc

    def _find_batch(self, offset: int, start_position: int) -> tuple[int, int, int, int] | None:
        entry_offset, position = self.offset_index.lookup(offset)
        expected = entry_offset if position > 0 else -1
        if start_position > position:
            position, expected = start_position, -1
        return native_segment.find_batch(self.fd, position, self.size, offset, expected)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FileSlice | None:
        """Whole batches from the one containing ``offset``: at most
        ``max_bytes`` (but at least one batch when ``min_one_batch``,
        KIP-74), none whose last offset is >= ``max_offset``. None when the
        segment has no batch at or after ``offset``; a zero-size slice when
        the limits exclude even the first one. The slice ends early, at a
        batch boundary, where the walk to its end meets a header on disk:
        the event loop does not wait for the disk there (the next fetch
        starts at that boundary, and its pages go by a worker thread)."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        start = found[0]
        if self._rest_fits(start, max_bytes, max_offset):
            return FileSlice(self.fd, start, self.size - start)
        walk = self._walk_start(start, max_bytes, max_offset)
        try:
            end = native_segment.read_extent(self.fd, start, walk, self.size, max_bytes,
                                             -1 if max_offset is None else max_offset, min_one_batch,
                                             stop_when_uncached=True)
        except ValueError as exc:
            raise KafkaStorageError(f"{self.log_path}: {exc}") from exc
        return FileSlice(self.fd, start, end - start)

    def _rest_fits(self, start: int, max_bytes: int, max_offset: int | None) -> bool:
        """Whether the slice is the rest of the segment, known without a
        header read: it fits in max_bytes and the segment ends below
        max_offset. A consumer at the high watermark or a follower at the
        log end reads so on every fetch (a pread fewer per partition)."""
        next_offset = self._next_offset
        return (self.size - start <= max_bytes and next_offset is not None
                and (max_offset is None or next_offset <= max_offset))

    def _walk_start(self, start: int, max_bytes: int, max_offset: int | None) -> int:
        """The furthest index entry the read may skip to: every batch before
        it fits in max_bytes and stays below max_offset."""
        index = self.offset_index
        slot = native_index.offset_index_position_lookup(index.buffer, index.entries, start + max_bytes)
        if max_offset is not None:
            slot = min(slot, native_index.offset_index_lookup(
                index.buffer, index.entries, max_offset - self.base_offset))
        if slot < 0:
            return start
        return max(start, index.entry(slot)[1])

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after
        ``starting_offset`` whose timestamp is >= ``timestamp``, or None."""
        _, index_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(index_offset, starting_offset))[1]
        while True:
            try:
                found = native_segment.find_timestamp(self.fd, position, self.size, timestamp, starting_offset)
            except ValueError as exc:
                raise KafkaStorageError(f"{self.log_path}: {exc}") from exc
            if found is None:
                return None
            batch_position, size = found[0], found[1]
            batch = record_codec.RecordBatch(os.pread(self.fd, size, batch_position))
            try:
                for record in batch.stream(max_decompressed_size(self.config.max_message_bytes)):
                    found_offset, found_timestamp = record.offset, record.timestamp
                    assert found_offset is not None and found_timestamp is not None  # decoded
                    if found_timestamp >= timestamp and found_offset >= starting_offset:
                        return found_offset, found_timestamp
            except record_codec.InvalidRecordError as exc:
                # Records too large or malformed to read: the batch holds the
                # timestamp, so a reader starting at its first offset misses nothing.
                log.warning("%s: %s; answering with the batch's first offset", self.log_path, exc)
                return max(batch.base_offset, starting_offset), batch.max_timestamp
            position = batch_position + size

    @property
    def largest_timestamp(self) -> int:
        """The largest batch timestamp, or the file's mtime when the batches
        carry none (Kafka ``LogSegment.largestTimestamp``)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self.fd).st_mtime * 1000)

    # -- truncation -------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove the batch containing ``offset`` and everything after it;
        returns the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found[0]
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self._reserve_end, self._reserved = 0, False
        self.size = position
        self.written_back = min(self.written_back, position)
        self.make_active()
        self._load_state()
        return removed

    # -- lifecycle --------------------------------------------------------------------------
    def _loaded_indexes(self) -> list[OffsetIndex | TimeIndex]:
        """The indexes opened so far (a lazy segment's may not be)."""
        return [index for index in (self._offset_index, self._time_index) if index is not None]

    def on_become_inactive(self) -> None:
        """On roll: a last time-index entry, then trim the files."""
        if self.size:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp,
                                         skip_full_check=True)
        self.trim()

    def make_active(self) -> None:
        self.offset_index.make_appendable()
        self.time_index.make_appendable()

    def trim(self) -> None:
        """Indexes written and mapped read-only, a preallocated ``.log`` cut
        to its data (an unopened lazy index is trimmed already)."""
        for index in self._loaded_indexes():
            index.trim()
        self._cut_to_size()

    def _cut_to_size(self) -> None:
        """Give back what lies past the data: a preallocated length, or the
        blocks reserved ahead of the appends (a truncation to the same
        length frees them)."""
        if self._reserved or os.fstat(self.fd).st_size > self.size:
            os.ftruncate(self.fd, self.size)
        self._reserve_end, self._reserved = 0, False

    def flush(self, sync: bool = True) -> None:
        """fdatasync the files; with ``sync`` False only write the index
        entries to the page cache (the caller syncs the filesystem)."""
        try:
            if sync:
                os.fdatasync(self.fd)
            for index in self._loaded_indexes():
                index.flush() if sync else index.sync()
            if self._txn_index is not None:
                self._txn_index.flush()
        except OSError as exc:
            raise KafkaStorageError(f"cannot flush {self.log_path}: {exc}") from exc

    def close(self) -> None:
        """Write pending index entries, cut a preallocated ``.log`` to its
        data, and close (nothing is mapped again: a close at shutdown
        costs no open of an index that did not change)."""
        for index in self._loaded_indexes():
            index.close()
        if self.fd >= 0:
            try:
                if not self.deleted:
                    self._cut_to_size()
            finally:
                os.close(self.fd)
                self.fd = -1

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted``; the fd stays open until
        ``delete_files`` so in-flight fetch slices remain readable."""
        self.trim()
        for suffix, index in ((INDEX_SUFFIX, self._offset_index), (TIME_INDEX_SUFFIX, self._time_index)):
            path = self._index_path(suffix)
            if index is not None:
                index.rename(path + DELETED_SUFFIX)
            elif os.path.exists(path):
                os.replace(path, path + DELETED_SUFFIX)
        txn_path = self._index_path(TXN_INDEX_SUFFIX)
        self.txn_index.rename_to(Path(txn_path + DELETED_SUFFIX))
        os.replace(self._log_file, self._log_file + DELETED_SUFFIX)
        self._log_file += DELETED_SUFFIX
        self.deleted = True

    def delete_files(self) -> None:
        self.close()
        for path in (self._log_file, self._index_path(INDEX_SUFFIX), self._index_path(TIME_INDEX_SUFFIX),
                     self._index_path(TXN_INDEX_SUFFIX)):
            _unlink(path)

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, size={self.size}, "
                f"next_offset={self._next_offset})")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

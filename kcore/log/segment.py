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

Not thread-safe: one owner (the partition's Log, on one event loop). The
file descriptor outlives a deletion request by ``file.delete.delay.ms`` so
that slices handed to in-flight fetches stay readable.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

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
from kcore.protocol.records import RecordBatch

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    """A segment opened on its files. Build with ``create`` or ``open``."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, *, fresh: bool):
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.config = config
        stem = self.directory / segment_name(base_offset)
        self.log_path = stem.with_suffix(LOG_SUFFIX)
        self.index_missing = not (stem.with_suffix(INDEX_SUFFIX).exists()
                                  and stem.with_suffix(TIME_INDEX_SUFFIX).exists())
        flags = os.O_RDWR | os.O_CREAT | (os.O_EXCL if fresh else 0)
        try:
            self.fd = os.open(self.log_path, flags, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot open {self.log_path}: {exc}") from exc
        try:
            self.size = 0 if fresh else os.fstat(self.fd).st_size
            self.offset_index = OffsetIndex(stem.with_suffix(INDEX_SUFFIX), base_offset,
                                            config.segment_index_bytes)
            self.time_index = TimeIndex(stem.with_suffix(TIME_INDEX_SUFFIX), base_offset,
                                        config.segment_index_bytes)
        except OSError as exc:
            if hasattr(self, "offset_index"):
                self.offset_index.close()
            os.close(self.fd)
            if fresh:  # O_EXCL: the file is ours; a later roll must be able to create it
                self.log_path.unlink(missing_ok=True)
                stem.with_suffix(INDEX_SUFFIX).unlink(missing_ok=True)
            raise KafkaStorageError(f"cannot open the indexes of {self.log_path}: {exc}") from exc
        self.txn_index = TransactionIndex(stem.with_suffix(TXN_INDEX_SUFFIX))
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None
        self.bytes_since_last_index_entry = 0
        self.created_ms = int(time.time() * 1000)
        self.tail_damaged = False
        self.deleted = False

    # -- construction ------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig) -> LogSegment:
        """A new, empty, active segment (files preallocated)."""
        segment = cls(directory, base_offset, config, fresh=True)
        try:
            segment.offset_index.preallocate()
            segment.time_index.preallocate()
            if config.preallocate:
                os.posix_fallocate(segment.fd, 0, config.segment_bytes)
        except OSError as exc:
            # E.g. a full disk: leave nothing behind, so the next roll can retry.
            segment.delete_files()
            raise KafkaStorageError(f"cannot create {segment.log_path}: {exc}") from exc
        return segment

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig) -> LogSegment:
        """An existing segment, trusted as cleanly written: its state is read
        from the indexes and the batch headers after the last index entry.
        Call ``needs_rebuild`` then ``recover`` when it may not be."""
        segment = cls(directory, base_offset, config, fresh=False)
        segment._load_state()
        return segment

    def _load_state(self) -> None:
        last_offset, last_position = self.offset_index.last_entry()
        if last_position > self.size:
            last_position = 0
        end, batches, next_offset, max_ts, max_ts_offset = native_segment.walk_headers(
            self.fd, last_position, self.size)
        self.tail_damaged = end < self.size
        self.size = end
        self.next_offset = next_offset if batches else (
            last_offset + 1 if self.offset_index.entries else self.base_offset)
        index_ts, index_ts_offset = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = index_ts, index_ts_offset
        if batches and (max_ts > index_ts or not self.time_index.entries):
            self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
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
        if self.index_missing or self.tail_damaged or self.offset_index.damaged \
                or self.time_index.damaged:
            return True
        offset, position = self.offset_index.last_entry()
        if self.offset_index.entries:
            try:
                found = native_segment.find_batch(self.fd, position, self.size, offset)
            except ValueError:
                return True
            if found is None or found[0] != position or found[3] != offset:
                return True
        _, time_offset = self.time_index.last_entry()
        return time_offset >= max(self.next_offset, self.base_offset + 1)

    # -- recovery ---------------------------------------------------------------------
    def recover(self) -> tuple[int, str | None]:
        """Check every batch (size, CRC, offsets), truncate the file at the
        first torn or corrupt one and rebuild both indexes. Returns the bytes
        cut off and the reason ('size', 'crc', ... or None)."""
        file_size = os.fstat(self.fd).st_size
        (end, next_offset, max_ts, max_ts_offset, batches, index_entries, time_entries,
         stop) = native_segment.scan_segment(self.fd, self.base_offset, file_size,
                                             self.config.index_interval_bytes)
        if end < file_size:
            os.ftruncate(self.fd, end)
        self.txn_index.truncate_to(next_offset)
        self.size = end
        self.offset_index.write_entries(index_entries)
        self.time_index.write_entries(time_entries)
        self.index_missing = self.tail_damaged = False
        self.next_offset = next_offset
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        last_position = self.offset_index.last_entry()[1]
        self.bytes_since_last_index_entry = end - last_position
        self._load_rolling_timestamp()
        return file_size - end, stop

    # -- append ------------------------------------------------------------------------
    def append(self, records, batches: list[tuple[int, int, int, int]],
               verify: bool = False) -> None:
        """Write ``records`` (whole batches) at the end and index them.
        ``batches``: (position in records, size, last_offset, max_timestamp).
        ``verify``: check each batch's CRC (and header) natively while
        writing; a bad batch raises CorruptRecordError and leaves the
        segment as it was."""
        position = self.size
        if verify:
            self._write_verified(records, position)
        else:
            self._write_all(records, position)
        interval = self.config.index_interval_bytes
        for batch_position, size, last_offset, max_timestamp in batches:
            if max_timestamp > self.max_timestamp or position + batch_position == 0:
                self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset
            if self.bytes_since_last_index_entry > interval:
                self.offset_index.append(last_offset, position + batch_position)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += size
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = batches[0][3]
        self.size = position + len(records)
        self.next_offset = batches[-1][2] + 1

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
            self._rebuild_index(exc)
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

    def _rebuild_index(self, cause: Exception) -> None:
        size, next_offset = self.size, self.next_offset
        removed, reason = self.recover()
        if removed or self.next_offset != next_offset:
            raise KafkaStorageError(
                f"{self.log_path}: corrupt data in a trusted segment ({reason}) at position "
                f"{self.size} of {size}, found while rebuilding its index ({cause})")

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FileSlice | None:
        """Whole batches from the one containing ``offset``: at most
        ``max_bytes`` (but at least one batch when ``min_one_batch``,
        KIP-74), none whose last offset is >= ``max_offset``. None when the
        segment has no batch at or after ``offset``; a zero-size slice when
        the limits exclude even the first one."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        start = found[0]
        walk = self._walk_start(start, max_bytes, max_offset)
        try:
            end = native_segment.read_extent(self.fd, start, walk, self.size, max_bytes,
                                             -1 if max_offset is None else max_offset, min_one_batch)
        except ValueError as exc:
            raise KafkaStorageError(f"{self.log_path}: {exc}") from exc
        return FileSlice(self.fd, start, end - start)

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
            batch = RecordBatch(os.pread(self.fd, size, batch_position))
            for record in batch.records():
                found_offset, found_timestamp = record.offset, record.timestamp
                assert found_offset is not None and found_timestamp is not None  # decoded
                if found_timestamp >= timestamp and found_offset >= starting_offset:
                    return found_offset, found_timestamp
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
        self.size = position
        self.offset_index.preallocate()
        self.time_index.preallocate()
        self._load_state()
        return removed

    # -- lifecycle --------------------------------------------------------------------------
    def on_become_inactive(self) -> None:
        """On roll: a last time-index entry, then trim the preallocated files."""
        if self.size:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp,
                                         skip_full_check=True)
        self.trim()

    def make_active(self) -> None:
        self.offset_index.preallocate()
        self.time_index.preallocate()

    def trim(self) -> None:
        self.offset_index.trim()
        self.time_index.trim()
        if os.fstat(self.fd).st_size > self.size:
            os.ftruncate(self.fd, self.size)

    def flush(self) -> None:
        try:
            os.fdatasync(self.fd)
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()
        except OSError as exc:
            raise KafkaStorageError(f"cannot flush {self.log_path}: {exc}") from exc

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted``; the fd stays open until
        ``delete_files`` so in-flight fetch slices remain readable."""
        self.trim()
        for item in (self.offset_index, self.time_index):
            item.rename(item.path.with_name(item.path.name + DELETED_SUFFIX))
        self.txn_index.rename_to(self.txn_index.path.with_name(
            self.txn_index.path.name + DELETED_SUFFIX))
        deleted = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
        os.replace(self.log_path, deleted)
        self.log_path = deleted
        self.deleted = True

    def delete_files(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path,
                     self.txn_index.path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, size={self.size}, "
                f"next_offset={self.next_offset})")

"""The log of one topic partition: an ordered list of segments.

Directory ``<log.dir>/<topic>-<partition>/`` holds the segments (see
segment.py) named by base offset; the newest is the active segment, the
only one appended to. Offsets run from ``log_start_offset`` (retention and
DeleteRecords move it) to ``log_end_offset`` (the next offset to assign).
``recovery_point`` is the offset below which everything was fsynced: an
unclean restart re-checks only what lies after it.

Produced RecordBatches (v2) stay bytes: ``append`` validates them natively
(sizes, magic, CRC-32C, record counts), patches baseOffset and
partitionLeaderEpoch in place and writes them; ``read`` answers with
FileSlices of whole batches. Kafka sources: ``UnifiedLog``, ``LocalLog``.

``topic_id`` is the id of the topic the directory belongs to, recorded in
its ``partition.metadata`` (KIP-516; None for a directory made before
topic ids, or whose file is unreadable: the caller records its topic's
id then). The file is written when the id is assigned and fsynced no
later than the first ``flush``: data appended before that is not durable
either (Kafka flushes it before the first append).

Each Log owns its partition's leader epoch cache (leader_epoch.py): leader
appends under a newer epoch, and replica appends of batches stamped with
one, assign it before the batch is written; truncation and log start moves
trim it after the segments changed. So the cache file may run ahead of the
segments after a crash, not behind them, and ``open`` trims what is ahead.

Time (``clock``, kcore/clock.py): segment.ms and retention.ms compare
the wall clock with record timestamps, as Kafka does; flush.ms and
file.delete.delay.ms measure elapsed time on the monotonic clock, so a
step of the wall clock neither holds back a flush nor deletes files early.

Not thread-safe: a Log has one owner, the event loop serving its
partition; no method awaits, so each call is atomic on that loop.
"""
from __future__ import annotations

import bisect
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from kcore._native import append as native_append
from kcore._native import records as native_records
from kcore._native.batch_layout import BATCH_HEADER_SIZE, TIMESTAMP_TYPE_MASK
from kcore._native.records import BatchHeader
from kcore.clock import SYSTEM_CLOCK, Clock, monotonic_ms, wall_ms
from kcore.log.checkpoints import LEADER_EPOCH_CHECKPOINT, PartitionMetadataFile, StagedRenames, fsync_dir
from kcore.log.config import LogConfig
from kcore.log.errors import CorruptRecordError, KafkaStorageError, OffsetOutOfRangeError, RecordTooLargeError
from kcore.log.file_slice import FileSlice
from kcore.log.leader_epoch import LeaderEpochCache
from kcore.log.loader import learn_leader_epochs, load_segments
from kcore.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment, segment_name
from kcore.log.txn_index import AbortedTxn
from kcore.log.writeback import WriteBehind
from kcore.metrics import LOG_FLUSH_STATS
from kcore.protocol.constants import INT32_MAX

CLEANED_SUFFIX = ".cleaned"
FUTURE_DIR_SUFFIX = "-future"
SWAP_SUFFIX = ".swap"
# The .log goes last in each rename round: loader.py reads a ``.log.swap``
# as "this swap was decided", anything else as leftovers.
_SWAP_ORDER = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX)
# ``batch_headers`` reads the log in chunks of this size: large enough that
# a 1 MiB batch header walk needs few preads, small enough to not matter.
REPLAY_CHUNK = 4 * 1024 * 1024

logger = logging.getLogger(__name__)  # "log" names a Log in this module


class AppendInfo(NamedTuple):
    """What one append did. ``batches`` are the native validator's
    headers, positions relative to the appended buffer, base offsets as
    they were before the append patched them. ``log_append_time`` is the batches' maxTimestamp when they carry the
    LogAppendTime attribute (stamped by the caller), else -1."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    records_count: int
    batches: list[BatchHeader]


def parse_topic_partition(directory: Path | str) -> tuple[str, int]:
    """``orders-3`` -> ("orders", 3); topic names may contain '-'. A future
    log's ``orders-3.<id>-future`` (a replica moving to another log dir,
    manager.py) names the same partition, as in Kafka's UnifiedLog."""
    name = os.path.basename(os.fspath(directory))
    if name.endswith(FUTURE_DIR_SUFFIX):
        name = name[:name.rfind(".")]
    topic, _, partition = name.rpartition("-")
    if not topic or not partition.isdigit():
        raise ValueError(f"{directory} is not named <topic>-<partition>")
    return topic, int(partition)


def now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    """See the module docstring. Build with ``Log.open``."""

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment],
                 log_start_offset: int, recovery_point: int):
        self.dir = directory if isinstance(directory, Path) else Path(directory)
        self.topic, self.partition = parse_topic_partition(self.dir)
        self.config = config
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._log_end_offset = segments[-1].next_offset
        self._log_start_offset = log_start_offset
        self._recovery_point = min(recovery_point, self._log_end_offset)
        self._unflushed_messages = 0
        self.clock: Clock = SYSTEM_CLOCK
        self._last_flush_ms = monotonic_ms(self.clock)
        # (monotonic deadline ms, segment) of files renamed .deleted.
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._dir_dirty = False
        self._leader_epoch_cache = LeaderEpochCache.in_directory(self.dir)
        self._roll_jitter_ms = config.random_segment_jitter()  # the active segment's
        # Marker offset of the newest aborted transaction indexed (None: not read yet).
        self._max_aborted_offset: int | None = None
        # Called when a truncation moved the recovery point back: recovery
        # trusts the index entries below the checkpointed recovery point,
        # so the checkpoint must not stay above data written anew (the log
        # manager writes it, as Kafka's LogManager.truncateTo does).
        self.recovery_point_lowered: Callable[[Log], None] | None = None
        # Called when the log start offset moved (DeleteRecords, a leader's
        # start copied by a follower, retention, truncation), so the log
        # manager rewrites ``log-start-offset-checkpoint``: a restart takes
        # the larger of it and the first segment's base offset, and must
        # neither bring deleted records back nor drop ones written anew.
        self.log_start_offset_moved: Callable[[Log], None] | None = None
        # Starts the writeback of appended bytes early (log.writeback.interval.bytes).
        self.write_behind: WriteBehind | None = None
        # Offsets of the producer state snapshots the directory held when
        # the log opened, for the first partition loading its state (None
        # once taken: ``take_snapshot_offsets_at_open``).
        self._snapshot_offsets_at_open: list[int] | None = None
        self._partition_metadata = PartitionMetadataFile(self.dir)
        self.topic_id: uuid.UUID | None = None
        self._topic_id_unsynced = False

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, config: LogConfig | None = None, recovery_point: int = 0,
             log_start_offset: int = 0, clean_shutdown: bool = False, create: bool = True) -> Log:
        """Open (creating if needed, unless ``create`` is False: the caller
        found it) the partition directory ``path``. Without
        ``clean_shutdown`` every segment from the one holding
        ``recovery_point`` is recovered (see loader.py)."""
        config = config or LogConfig()
        directory = path if isinstance(path, Path) else Path(path)
        if create:
            parse_topic_partition(directory)
            directory.mkdir(parents=True, exist_ok=True)
        segments, recovered, snapshot_offsets = load_segments(directory, config, recovery_point,
                                                              clean_shutdown)
        if not segments:
            segments = [LogSegment.create(directory, log_start_offset, config)]
        segments[-1].make_active()
        start = max(log_start_offset, segments[0].base_offset)
        log = cls(directory, config, segments, start, recovery_point)
        log._snapshot_offsets_at_open = snapshot_offsets
        log._read_topic_id()
        if clean_shutdown:
            log._recovery_point = log._log_end_offset
        if start > log._log_end_offset:
            log.truncate_fully_and_start_at(start)
        else:
            log._load_leader_epochs(recovered)
        return log

    def _read_topic_id(self) -> None:
        try:
            self.topic_id = self._partition_metadata.read()
        except KafkaStorageError as exc:  # the controller's id is recorded anew
            logger.warning("%s: ignoring the topic id: %s", self.dir, exc)

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Record ``topic_id`` in ``partition.metadata`` (fsynced by the
        next ``flush``); ValueError if the log has another id already."""
        if self.topic_id == topic_id:
            return
        if self.topic_id is not None:
            raise ValueError(f"{self.dir} belongs to topic id {self.topic_id}, not {topic_id}")
        self._partition_metadata.write(topic_id, durable=False)
        self.topic_id = topic_id
        self._topic_id_unsynced = self._dir_dirty = True

    def take_snapshot_offsets_at_open(self) -> list[int] | None:
        """The producer snapshot offsets listed when the log opened, once
        (a later caller lists the directory itself: files change)."""
        offsets, self._snapshot_offsets_at_open = self._snapshot_offsets_at_open, None
        return offsets

    def _load_leader_epochs(self, recovered: list[tuple[LogSegment, int]]) -> None:
        """Make the cache read from its file agree with the loaded log
        (Kafka ``LogLoader``): entries at or after the log end were assigned
        before batches a crash lost, recovered segments teach the epochs of
        their batches, and the first entry moves up to the log start."""
        cache = self._leader_epoch_cache
        file_lost = (cache.latest_entry is None and self._log_end_offset > self._log_start_offset
                     and not (self.dir / LEADER_EPOCH_CHECKPOINT).exists())
        cache.truncate_from_end(self._log_end_offset)
        for segment, position in recovered:
            learn_leader_epochs(segment, cache, position)
        cache.truncate_from_start(self._log_start_offset)
        # Told after recovery: a process killed before its first flush leaves
        # no file, and recovery relearns every epoch from the batches.
        known_from = cache.entries[0][1] if cache.entries else self._log_end_offset
        if file_lost and known_from > self._log_start_offset:
            logger.warning("%s: no %s for a log holding offsets [%d, %d); the leader epochs of "
                           "[%d, %d) are unknown", self.dir, LEADER_EPOCH_CHECKPOINT,
                           self._log_start_offset, self._log_end_offset,
                           self._log_start_offset, known_from)

    # -- properties -------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed_messages

    @property
    def last_flush_ms(self) -> int:
        """When the log was last flushed, on the monotonic clock (ms)."""
        return self._last_flush_ms

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._leader_epoch_cache

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end_offset) answering OffsetForLeaderEpoch for
        ``leader_epoch`` (``LeaderEpochCache.end_offset_for`` at the log end)."""
        return self._leader_epoch_cache.end_offset_for(leader_epoch, self._log_end_offset)

    # -- append -------------------------------------------------------------------------
    def append(self, records, leader_epoch: int, assign_offsets: bool = True,
               validate: bool = True, defer_flush: bool = False) -> AppendInfo:
        """Append whole v2 batches held in ``records`` (a bytearray or a
        writable memoryview; with ``assign_offsets`` their baseOffset and
        partitionLeaderEpoch are rewritten in it). ``validate`` runs the
        native checks; pass False only for bytes validated already.
        ``assign_offsets=False`` keeps the batches' own offsets (a replica
        copying its leader), which must start at or after the log end.
        ``defer_flush``: the caller makes the batches durable itself (group
        commit, durability.py), so flush.messages does not fsync here.
        Raises CorruptRecordError or RecordTooLargeError having written
        nothing, KafkaStorageError when the write fails."""
        # From OVERLAP_BYTES on, the CRC is checked on a second core while
        # the batches are written (native/append.pyx): ~20 us less per MiB.
        verify_while_writing = validate and len(records) >= native_append.OVERLAP_BYTES
        try:
            if validate:
                infos = native_records.validate_batches(records,
                                                        check_crc=not verify_while_writing)
            else:
                infos = native_records.batch_infos(records)
        except native_records.CorruptBatchError as exc:
            raise CorruptRecordError(exc.reason, str(exc), exc.position) from None
        if not infos:
            raise CorruptRecordError("size", "no record batch to append")
        size = infos[-1].position + infos[-1].size_in_bytes
        self._check_sizes(infos, size)
        # A new epoch goes to the cache file before its first batch goes to
        # the segment, so a crash cannot leave a batch whose epoch the file
        # lacks. If the append fails after that, the entry stays where the
        # epoch's next batch will start: harmless.
        if assign_offsets:
            first_offset = self._log_end_offset
            if leader_epoch > self._leader_epoch_cache.latest_epoch:  # once per leader change
                self._leader_epoch_cache.assign(leader_epoch, first_offset)
            next_offset = native_records.patch_batches(records, first_offset, leader_epoch)
            batch_offsets = None
        else:
            self._check_replica_offsets(infos)
            self._assign_replica_epochs(infos)
            batch_offsets = [info.base_offset for info in infos]
            first_offset = batch_offsets[0]
            next_offset = infos[-1].last_offset + 1
        batches, max_timestamp, offset_of_max_timestamp, records_count = \
            _segment_batches(infos, first_offset, batch_offsets)
        segment = self._maybe_roll(size, max_timestamp, first_offset, next_offset - 1)
        segment.append(records, batches, verify=verify_while_writing)
        if self.write_behind is not None:
            self.write_behind.appended(segment)
        self._log_end_offset = next_offset
        self._unflushed_messages += records_count
        if not defer_flush and self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        log_append_time = max_timestamp if infos[0].attributes & TIMESTAMP_TYPE_MASK else -1
        return AppendInfo(first_offset, next_offset - 1, max_timestamp, offset_of_max_timestamp,
                          log_append_time, records_count, infos)

    def _check_sizes(self, infos: list[BatchHeader], size: int) -> None:
        limit = self.config.max_message_bytes
        for info in infos:
            if info.size_in_bytes > limit:
                raise RecordTooLargeError(
                    f"batch of {info.size_in_bytes} bytes at position {info.position} exceeds "
                    f"max.message.bytes={limit}")
        if size > self.config.segment_bytes:
            raise RecordTooLargeError(
                f"append of {size} bytes exceeds segment.bytes={self.config.segment_bytes}")

    def _check_replica_offsets(self, infos: list[BatchHeader]) -> None:
        """The batches' own base offsets must increase from the log end."""
        expected = self._log_end_offset
        for info in infos:
            if info.base_offset < expected:
                raise CorruptRecordError(
                    "offset", f"batch at offset {info.base_offset} (position {info.position}) is "
                    f"before the next expected offset {expected}", info.position)
            expected = info.last_offset + 1

    def _assign_replica_epochs(self, infos: list[BatchHeader]) -> None:
        """A replica learns each epoch its leader stamped, where it starts
        (Kafka ``UnifiedLog.append``); batches of older epochs change nothing."""
        cache = self._leader_epoch_cache
        for info in infos:
            if info.partition_leader_epoch > cache.latest_epoch:
                cache.assign(info.partition_leader_epoch, info.base_offset)

    # -- rolling ---------------------------------------------------------------------------
    def _maybe_roll(self, size: int, max_timestamp: int, first_offset: int,
                    last_offset: int) -> LogSegment:
        """The segment to append to, rolling first when Kafka would
        (``LogSegment.shouldRoll``): segment.bytes, segment.ms (or a shorter
        max.compaction.lag.ms) less the segment's random jitter, a full
        index, or a last offset beyond the int32 range of the segment's base."""
        segment = self._segments[-1]
        fits_offsets = 0 <= last_offset - segment.base_offset <= INT32_MAX  # relative offsets in the index
        if segment.size == 0:
            if fits_offsets and segment.base_offset <= first_offset:
                return segment
            return self.roll(first_offset)
        offset_index, time_index = segment.offset_index, segment.time_index
        if (segment.size > self.config.segment_bytes - size
                or offset_index.entries >= offset_index.capacity
                or time_index.entries >= time_index.capacity
                or not fits_offsets
                or self._time_to_roll(segment, max_timestamp)):
            return self.roll(first_offset)
        return segment

    def _time_to_roll(self, segment: LogSegment, max_timestamp: int) -> bool:
        rolling = segment.rolling_based_timestamp
        if rolling is not None and rolling >= 0:
            waited = max_timestamp - rolling
        else:
            waited = wall_ms(self.clock) - segment.created_ms
        return waited > self.config.max_segment_ms - self._roll_jitter_ms

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (or at
        ``expected_next_offset`` when larger). An empty active segment is
        replaced rather than left behind."""
        base = max(self._log_end_offset, expected_next_offset or 0)
        active = self._segments[-1]
        if active.size == 0:
            if active.base_offset == base:
                return active
            self._segments.pop()
            self._bases.pop()
            active.delete_files()
        else:
            active.on_become_inactive()
        stale = self.dir / (segment_name(base) + LOG_SUFFIX)
        if stale.exists():
            raise KafkaStorageError(f"cannot roll: {stale} already exists")
        segment = LogSegment.create(self.dir, base, self.config)
        self._segments.append(segment)
        self._bases.append(base)
        self._dir_dirty = True
        self._roll_jitter_ms = self.config.random_segment_jitter()
        return segment

    # -- reads ----------------------------------------------------------------------------
    def _check_offset(self, offset: int) -> None:
        if offset < self._log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self._log_start_offset}, {self._log_end_offset}] "
                f"of {self.topic}-{self.partition}")

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> list[FileSlice]:
        """FileSlices of whole batches from the batch containing ``offset``,
        at most ``max_bytes`` in total except that with
        ``min_one_message`` the first batch always comes (KIP-74), and no
        batch whose last offset is >= ``max_offset`` (the high watermark or
        last stable offset). Empty at the log end; OffsetOutOfRangeError
        outside [log_start_offset, log_end_offset]."""
        self._check_offset(offset)
        if offset == self._log_end_offset or (max_offset is not None and offset >= max_offset):
            return []
        slices: list[FileSlice] = []
        i = bisect.bisect_right(self._bases, offset) - 1
        remaining, min_one = max_bytes, min_one_message
        while i < len(self._segments):
            segment = self._segments[i]
            found = segment.read(offset, remaining, max_offset, min_one)
            if found is not None:
                if found.size == 0:
                    break
                slices.append(found)
                remaining -= found.size
                min_one = False
                if found.position + found.size < segment.size or remaining <= 0:
                    break
            i += 1
            if i < len(self._segments):
                offset = self._segments[i].base_offset
                if max_offset is not None and offset >= max_offset:
                    break
        return slices

    def batch_headers(self, start_offset: int, end_offset: int | None = None
                      ) -> Iterator[tuple[BatchHeader, bytes]]:
        """Batch headers from ``start_offset`` to ``end_offset`` (the log
        end if None; a batch that straddles it is included), each with the
        chunk it was read from (pread; records are skipped), for replaying
        producer state."""
        offset = start_offset
        end = self._log_end_offset if end_offset is None else min(end_offset, self._log_end_offset)
        while offset < end:
            slices = self.read(offset, REPLAY_CHUNK, min_one_message=True)
            if not slices:
                return
            for file_slice in slices:
                data = os.pread(file_slice.fd, file_slice.size, file_slice.position)
                position = 0
                while position + BATCH_HEADER_SIZE <= len(data):
                    header = native_records.parse_batch_header(data, position)
                    if header.base_offset >= end:
                        return
                    position += header.size_in_bytes
                    offset = header.last_offset + 1
                    yield header, data

    # -- transactions ------------------------------------------------------------------------
    def append_aborted_txn(self, entry: AbortedTxn) -> None:
        """Index an aborted transaction in the segment holding its marker.
        A marker indexed already (producer state replayed over it after a
        restart or a truncation) is ignored: entries only ever grow."""
        if entry.last_offset <= self._last_aborted_offset() \
                or not self._log_start_offset <= entry.last_offset < self._log_end_offset:
            return
        i = bisect.bisect_right(self._bases, entry.last_offset) - 1
        try:
            self._segments[i].txn_index.append(entry)
        finally:
            self._max_aborted_offset = entry.last_offset  # in memory even when the write failed

    def _last_aborted_offset(self) -> int:
        if self._max_aborted_offset is None:
            self._max_aborted_offset = max(
                (s.txn_index.last_offset for s in reversed(self._segments)
                 if s.txn_index.path.exists()), default=-1)
        return self._max_aborted_offset

    def collect_aborted_txns(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_offset), for
        a read_committed fetch (Kafka ``collectAbortedTransactions``). The
        scan goes on past ``upper_offset`` until an entry's last stable
        offset reaches it: a transaction that began below it may have been
        aborted by a later marker."""
        if self._last_aborted_offset() < fetch_offset:
            return []
        found: list[AbortedTxn] = []
        start = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        for segment in self._segments[start:]:
            entries = segment.txn_index.collect(fetch_offset, upper_offset)
            found.extend(entries)
            if any(e.last_stable_offset >= upper_offset for e in entries):
                break
        return found

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start
        offset whose timestamp is >= ``timestamp``, or None. The special
        timestamps -1 (latest) and -2 (earliest) are the caller's."""
        for segment in self._segments:
            if segment.size == 0 or segment.largest_timestamp < timestamp:
                continue
            if segment.next_offset <= self._log_start_offset:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
            if found is not None:
                return found
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's largest
        timestamp (ListOffsets MAX_TIMESTAMP, KIP-734), or None when empty."""
        live = [s for s in self._segments
                if s.size > 0 and s.next_offset > self._log_start_offset]
        if not live:
            return None
        return self.offset_for_timestamp(max(s.largest_timestamp for s in live))

    # -- truncation ------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> bool:
        """Remove every batch from the one containing ``offset`` on (for a
        follower, ``offset`` is a batch boundary). Returns False when the log
        ends at or before ``offset`` already."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._log_end_offset:
            return False
        if offset <= self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._segments[-1].base_offset > offset:
            self._schedule_delete(self._segments.pop())
            self._bases.pop()
        active = self._segments[-1]
        active.truncate_to(offset)
        active.make_active()
        self._log_end_offset = active.next_offset
        self._set_log_start_offset(min(self._log_start_offset, self._log_end_offset))
        self._leader_epoch_cache.truncate_from_end(self._log_end_offset)
        self._max_aborted_offset = None
        self._lower_recovery_point(self._log_end_offset)
        return True

    def _lower_recovery_point(self, offset: int) -> None:
        if offset < self._recovery_point:
            self._recovery_point = offset
            if self.recovery_point_lowered is not None:
                self.recovery_point_lowered(self)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the log, empty, at ``offset``."""
        for segment in self._segments:
            self._schedule_delete(segment)
        segment = LogSegment.create(self.dir, offset, self.config)
        self._segments = [segment]
        self._bases = [offset]
        self._log_end_offset = offset
        self._set_log_start_offset(offset)
        self._dir_dirty = True
        self._leader_epoch_cache.clear()
        self._max_aborted_offset = None
        if offset < self._recovery_point:
            self._lower_recovery_point(offset)
        else:
            self._recovery_point = offset

    # -- retention ---------------------------------------------------------------------------
    def delete_old_segments(self, high_watermark: int | None = None) -> int:
        """One retention pass (cleanup.policy contains delete): whole
        segments wholly below the log start offset, older than
        retention.ms (by largest timestamp) or beyond retention.bytes,
        oldest first, never past ``high_watermark`` (default: the log end).
        Files are renamed ``.deleted`` and removed file.delete.delay.ms
        later. Returns the number of segments deleted."""
        deleted = self._delete_segments(self._breaches_log_start, high_watermark)
        if not self.config.delete:
            return deleted
        if self.config.retention_ms >= 0:
            limit = wall_ms(self.clock) - self.config.retention_ms
            deleted += self._delete_segments(
                lambda segment, _next: segment.largest_timestamp < limit, high_watermark)
        if self.config.retention_bytes >= 0:
            excess = [self.size_in_bytes - self.config.retention_bytes]

            def over_size(segment: LogSegment, _next) -> bool:
                if excess[0] - segment.size < 0:
                    return False
                excess[0] -= segment.size
                return True

            deleted += self._delete_segments(over_size, high_watermark)
        return deleted

    def _breaches_log_start(self, segment: LogSegment, next_segment: LogSegment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= self._log_start_offset

    def _delete_segments(self, predicate, high_watermark: int | None) -> int:
        upper = self._log_end_offset if high_watermark is None else high_watermark
        count = 0
        for i, segment in enumerate(self._segments):
            next_segment = self._segments[i + 1] if i + 1 < len(self._segments) else None
            if next_segment is None and segment.size == 0:
                break
            upper_ok = (next_segment.base_offset if next_segment else self._log_end_offset) <= upper
            if not (upper_ok and predicate(segment, next_segment)):
                break
            count += 1
        if count == 0:
            return 0
        if count == len(self._segments):
            self.roll()
        for _ in range(count):
            self._schedule_delete(self._segments.pop(0))
            self._bases.pop(0)
        self._update_log_start_offset(max(self._log_start_offset, self._segments[0].base_offset))
        return count

    def _schedule_delete(self, segment: LogSegment) -> None:
        segment.mark_deleted()
        delay = self.config.file_delete_delay_ms
        if delay <= 0:
            segment.delete_files()
        else:
            self._pending_deletes.append((monotonic_ms(self.clock) + delay, segment))

    def delete_expired_files(self) -> int:
        """Remove ``.deleted`` files whose delay has passed; returns how many
        segments were removed."""
        now = monotonic_ms(self.clock)
        due = [segment for deadline, segment in self._pending_deletes if deadline <= now]
        self._pending_deletes = [(d, s) for d, s in self._pending_deletes if d > now]
        for segment in due:
            segment.delete_files()
        return len(due)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset forward (DeleteRecords, a follower
        taking its leader's); returns whether it moved. Reads below it
        fail with OffsetOutOfRangeError at once; the segments wholly below
        it go with ``delete_segments_below_log_start`` or the next
        retention pass."""
        if offset > self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"log start offset {offset} is beyond the log end {self._log_end_offset}")
        if offset <= self._log_start_offset:
            return False
        self._update_log_start_offset(offset)
        return True

    def delete_segments_below_log_start(self) -> int:
        """The part of a retention pass that every cleanup.policy runs:
        delete the segments wholly below the log start offset (the segment
        holding it stays, so reads from it still find their batch).
        Returns the number deleted."""
        return self._delete_segments(self._breaches_log_start, None)

    def _update_log_start_offset(self, offset: int) -> None:
        self._set_log_start_offset(offset)
        self._leader_epoch_cache.truncate_from_start(offset)

    def _set_log_start_offset(self, offset: int) -> None:
        if offset != self._log_start_offset:
            self._log_start_offset = offset
            if self.log_start_offset_moved is not None:
                self.log_start_offset_moved(self)

    # -- compaction ---------------------------------------------------------------------------
    def replace_segments(self, base_offset: int, old_segments: list[LogSegment]) -> LogSegment:
        """Swap the compacted segment written as
        ``<base_offset>.{log,index,timeindex}.cleaned`` in for
        ``old_segments``, a run of inactive segments of this log starting at
        ``base_offset`` (Kafka ``LocalLog.replaceSegments``). Order, each
        step crash-safe (loader.py finishes or drops what a crash leaves):
        ``.cleaned`` -> ``.swap``; old segments -> ``.deleted`` (their fds
        stay open file.delete.delay.ms for in-flight fetches); ``.swap`` ->
        final names. Raises ValueError, touching nothing, when the run is
        no longer a run of this log's inactive segments."""
        start = self._run_of(old_segments)
        if old_segments[0].base_offset != base_offset:
            raise ValueError(f"cleaned segment {base_offset} does not start at "
                             f"{old_segments[0].base_offset}")
        stem = self.dir / segment_name(base_offset)
        names = [stem.with_name(stem.name + suffix) for suffix in _SWAP_ORDER]
        # The cleaned segment keeps the aborted transactions of those it replaces.
        carried = [entry for old in old_segments for entry in old.txn_index.entries]
        try:
            for name in names:
                os.replace(f"{name}{CLEANED_SUFFIX}", f"{name}{SWAP_SUFFIX}")
            fsync_dir(self.dir)
            for segment in old_segments:
                self._schedule_delete(segment)
            for name in names:
                os.replace(f"{name}{SWAP_SUFFIX}", name)
            fsync_dir(self.dir)
            segment = LogSegment.open(self.dir, base_offset, self.config, lazy=True)
            for entry in carried:
                segment.txn_index.append(entry)
            segment.txn_index.flush()
        except OSError as exc:
            raise KafkaStorageError(f"cannot swap cleaned segment {stem}: {exc}") from exc
        self._segments[start:start + len(old_segments)] = [segment]
        self._bases[start:start + len(old_segments)] = [base_offset]
        return segment

    def _run_of(self, segments: list[LogSegment]) -> int:
        for i, candidate in enumerate(self._segments[:-1]):
            if segments and candidate is segments[0]:
                run = self._segments[i:i + len(segments)]
                if i + len(segments) < len(self._segments) and all(
                        a is b for a, b in zip(run, segments)):
                    return i
                break
        raise ValueError(f"{segments} are no longer inactive segments of "
                         f"{self.topic}-{self.partition}")

    # -- durability and lifecycle --------------------------------------------------------
    def flush(self, up_to_offset: int | None = None, sync: bool = True,
              staged: StagedRenames | None = None) -> None:
        """fsync the segments holding offsets [recovery_point, up_to_offset)
        (default: the log end) and move the recovery point there. With
        ``sync`` False everything is written but nothing fsynced, and the
        leader epoch file goes to ``staged``: the caller syncs the
        filesystem and commits ``staged`` before it checkpoints the
        recovery point (a clean shutdown, LogManager.shutdown)."""
        offset = self._flush_offset(up_to_offset)
        started = time.monotonic() if offset > self._recovery_point or self._dir_dirty else 0.0
        if offset > self._recovery_point:
            self._leader_epoch_cache.flush(sync, staged)
            for segment in self._segments_to_flush(offset):
                segment.flush(sync)
            self._recovery_point = offset
        if self._topic_id_unsynced and sync:
            self._partition_metadata.sync()
            self._topic_id_unsynced = False
        if self._dir_dirty and sync:
            fsync_dir(self.dir)
            self._dir_dirty = False
        if started:
            LOG_FLUSH_STATS.flush_time_ms.observe((time.monotonic() - started) * 1000)
        if offset >= self._log_end_offset:
            self._unflushed_messages = 0
        self._last_flush_ms = monotonic_ms(self.clock)

    def unflushed_fds(self, up_to_offset: int | None = None) -> list[int]:
        """The ``.log`` descriptors that flush(up_to_offset) would fdatasync:
        a worker thread may sync them first, so that the flush on the event
        loop finds their pages written (LogManager.write_back_dirty_logs)."""
        offset = self._flush_offset(up_to_offset)
        if offset <= self._recovery_point:
            return []
        return [segment.fd for segment in self._segments_to_flush(offset)]

    def _flush_offset(self, up_to_offset: int | None) -> int:
        return self._log_end_offset if up_to_offset is None else min(up_to_offset, self._log_end_offset)

    def _segments_to_flush(self, offset: int) -> list[LogSegment]:
        """The segments holding offsets [recovery_point, offset)."""
        return [segment for i, segment in enumerate(self._segments)
                if segment.base_offset < offset
                and (i + 1 == len(self._bases) or self._bases[i + 1] > self._recovery_point)]

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for segment in self._segments:
            segment.config = config

    def close(self, sync: bool = True, staged: StagedRenames | None = None) -> None:
        """Write the leader epoch file if it lacks a change (as ``flush``
        does), the pending index entries, and close everything (the caller
        flushes first for a clean shutdown)."""
        try:
            self._leader_epoch_cache.flush(sync, staged)
        except KafkaStorageError as exc:  # the segments still close; recovery relearns epochs
            logger.error("%s: %s", self.dir, exc)
        for segment in self._segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.close()

    def delete(self) -> None:
        """Close and remove the partition directory."""
        self.close()
        for _, segment in self._pending_deletes:
            segment.delete_files()
        self._pending_deletes = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self._log_end_offset}, segments={len(self._segments)})")


def _segment_batches(infos: list[BatchHeader], first_offset: int,
                     batch_offsets: list[int] | None) -> tuple[list[tuple[int, int, int, int]], int, int, int]:
    """Per batch (position, size, last_offset, max_timestamp) for the
    segment, plus the append's max timestamp, its offset and record count."""
    batches = []
    offset = first_offset
    max_timestamp, offset_of_max_timestamp, records_count = -1, first_offset, 0
    for i, info in enumerate(infos):
        base = offset if batch_offsets is None else batch_offsets[i]
        last = base + info.last_offset_delta
        if i == 0 or info.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = info.max_timestamp, last
        batches.append((info.position, info.size_in_bytes, last, info.max_timestamp))
        records_count += info.records_count
        offset = last + 1
    return batches, max_timestamp, offset_of_max_timestamp, records_count


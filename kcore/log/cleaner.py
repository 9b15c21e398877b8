"""The log cleaner: compaction of every log whose cleanup.policy has compact.

Kafka ``LogCleaner`` + ``LogCleanerManager``. Each round picks the
filthiest compacted log and runs one pass over it (cleaner_task.py: offset
map of the dirty section, rewrite of everything below it, swap):

* clean section [log start, first dirty offset): already compacted; dirty
  section [first dirty offset, first uncleanable offset): written since.
  The first uncleanable offset is the lowest of the active segment's base,
  the base of the segment holding the high watermark (nothing consumers
  cannot see yet is compacted) and the base of the first dirty segment
  holding a record younger than min.compaction.lag.ms; it is always a
  segment base, so the active segment is never touched.
* cleanable ratio = dirty bytes / (clean + dirty bytes), by segment sizes;
  a log is cleaned when it reaches min.cleanable.dirty.ratio, when a dirty
  segment below the active one holds a record older than
  max.compaction.lag.ms (by its first batch's timestamp, whatever the ratio;
  Kafka ``LogCleanerManager.maxCompactionDelay``, KIP-354: the active
  segment rolls at that age, log.py), or when a tombstone or marker it kept
  has reached its delete horizon.
* ``cleaner-offset-checkpoint`` in each log dir (Kafka's name and format,
  checkpoints.py): topic partition first-dirty-offset, written after each
  completed pass. An offset outside [log start, log end] (the log was
  truncated or replaced) restarts at the log start.

Runs as one asyncio task on the broker's event loop (``run``), because
the Log is not thread-safe and record decoding is Python (it would hold the
GIL in a worker thread and stall the loop's I/O for the 5 ms switch
interval after every syscall the loop makes). The pass advances in steps of
at most ``STEP_BUDGET_S`` of loop time (one batch per step, checked after
each) and yields to the loop between them; the blocking parts (native
segment check and index build, fsync) go to a single worker thread. So a
produce or fetch waits behind the cleaner for at most one step.
``log.cleaner.backoff.ms`` is the pause when no log needs cleaning. A log
whose replica is moving to another log dir (it has a future log) is not
cleaned until the move is over, and the move swaps logs only while no pass
is on them (``cleaning``), as Kafka pauses cleaning for it.

Concurrency contract: not thread-safe; every method runs on the loop that
owns the logs (``clean_log`` drives a whole pass synchronously, for tools
and tests).
"""
from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcore.log.checkpoints import OffsetCheckpointFile
from kcore.log.cleaner_task import MAX_MAP_ENTRIES, CleaningTask, CleanResult, Offload, run_steps
from kcore.log.errors import KafkaStorageError
from kcore.log.log import Log, now_ms
from kcore.log.manager import LogManager

log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# Loop time the cleaner takes before it yields. Anything else on the loop
# waits behind it once per loop iteration it needs: a 1 ms ticker (3
# iterations: timer, future, task step) saw gaps of 3 x budget + 1 ms when
# idle (16 ms at 5 ms, 4 ms at 1 ms). 2 ms bounds that near 7 ms (plus one
# batch: ~0.5 ms per 1000 small records) at a few % of pass time.
STEP_BUDGET_S = 0.002
# A log whose pass failed (I/O error, corrupt data) is retried this much
# later rather than every round.
FAILED_LOG_RETRY_MS = 300_000
DEFAULT_BACKOFF_MS = 15_000  # Kafka's log.cleaner.backoff.ms


@dataclass(frozen=True)
class LogToClean:
    """A compacted log's sections as the cleaner measures them."""

    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


class LogCleaner:
    """See the module docstring."""

    def __init__(self, log_manager: LogManager, backoff_ms: int = DEFAULT_BACKOFF_MS, *,
                 enabled: bool = True, clock: Callable[[], int] = now_ms,
                 max_map_entries: int = MAX_MAP_ENTRIES,
                 high_watermark_of: Callable[[str, int], int | None] | None = None):
        """``log_manager``: a LogManager (``all_logs()``, ``log_dirs``).
        ``high_watermark_of(topic, partition)`` bounds what is compacted;
        defaults to the log manager's."""
        self.log_manager = log_manager
        self.backoff_ms = backoff_ms
        self.enabled = enabled
        self.clock = clock
        self.max_map_entries = max_map_entries
        self.high_watermark_of = high_watermark_of or getattr(log_manager, "high_watermark_of", None)
        self._first_dirty: dict[tuple[str, int], int] = {}
        self._dir_of: dict[tuple[str, int], Path] = {}
        self._seen: dict[tuple[str, int], Log] = {}
        self._horizons: dict[tuple[str, int], int] = {}
        self._failed_until: dict[tuple[str, int], int] = {}
        self.last_result: CleanResult | None = None
        self.cleaning: Log | None = None  # the log a pass of ``run`` is on
        for directory in getattr(log_manager, "log_dirs", []):
            self._read_checkpoint(Path(directory))

    # -- measuring ----------------------------------------------------------------------
    def first_dirty_offset(self, item: Log) -> int:
        key = (item.topic, item.partition)
        if self._seen.get(key, item) is not item:
            self._first_dirty.pop(key, None)  # a deleted and re-created partition
        self._seen[key] = item
        self._dir_of[key] = item.dir.parent
        offset = self._first_dirty.get(key, item.log_start_offset)
        if offset < item.log_start_offset or offset > item.log_end_offset:
            return item.log_start_offset
        return offset

    def first_uncleanable_offset(self, item: Log, first_dirty_offset: int) -> int:
        segments = item.segments
        bases = [segment.base_offset for segment in segments]
        uncleanable = bases[-1]
        high_watermark = self.high_watermark_of(item.topic, item.partition) \
            if self.high_watermark_of else None
        if high_watermark is not None:
            uncleanable = min(uncleanable, bases[max(bisect.bisect_right(bases, high_watermark) - 1, 0)])
        lag = item.config.min_compaction_lag_ms
        if lag > 0:
            limit = self.clock() - lag
            for i, segment in enumerate(segments[:-1]):
                dirty = i + 1 < len(bases) and bases[i + 1] > first_dirty_offset
                if dirty and segment.size and segment.largest_timestamp > limit:
                    uncleanable = min(uncleanable, segment.base_offset)
                    break
        return uncleanable

    def max_compaction_delay(self, item: Log, first_dirty_offset: int, now: int) -> int:
        """How far past max.compaction.lag.ms the oldest dirty segment below
        the active one is, by its first batch's timestamp; 0 when none is."""
        segments = item.segments
        timestamps = [segment.rolling_based_timestamp for i, segment in enumerate(segments[:-1])
                      if segments[i + 1].base_offset > first_dirty_offset
                      and segment.rolling_based_timestamp is not None
                      and segment.rolling_based_timestamp > 0]
        clean_until = now - max(item.config.max_compaction_lag_ms, 0)
        if timestamps and min(timestamps) < clean_until:
            return clean_until - min(timestamps)
        return 0

    def log_to_clean(self, item: Log) -> LogToClean:
        first_dirty = self.first_dirty_offset(item)
        uncleanable = self.first_uncleanable_offset(item, first_dirty)
        segments = item.segments
        clean = dirty = 0
        for i, segment in enumerate(segments):
            end = segments[i + 1].base_offset if i + 1 < len(segments) else item.log_end_offset
            if segment.base_offset >= uncleanable:
                break
            if end <= first_dirty:
                clean += segment.size
            else:
                dirty += segment.size
        return LogToClean(item, first_dirty, uncleanable, clean, dirty)

    def cleanable_logs(self) -> list[LogToClean]:
        """Compacted logs due for a pass, filthiest first."""
        now = self.clock()
        due = []
        # A replica moving to another log dir is not cleaned until it moved (Kafka pauses it).
        moving = getattr(self.log_manager, "future_logs", {})
        for item in self.log_manager.all_logs():
            key = (item.topic, item.partition)
            if (not item.config.compact or self._failed_until.get(key, 0) > now
                    or key in moving):
                continue
            measured = self.log_to_clean(item)
            if measured.clean_bytes + measured.dirty_bytes == 0:
                continue
            horizon_due = self._horizons.get(key, now + 1) <= now
            overdue = self.max_compaction_delay(item, measured.first_dirty_offset, now) > 0
            if horizon_due or (measured.dirty_bytes and (
                    overdue or measured.cleanable_ratio >= item.config.min_cleanable_dirty_ratio)):
                due.append(measured)
        due.sort(key=lambda measured: measured.cleanable_ratio, reverse=True)
        return due

    # -- cleaning -------------------------------------------------------------------------
    def task_for(self, measured: LogToClean) -> CleaningTask:
        return CleaningTask(measured.log, measured.first_dirty_offset,
                            measured.first_uncleanable_offset, self.clock(),
                            max_map_entries=self.max_map_entries)

    def clean_log(self, item: Log) -> CleanResult:
        """One whole pass over ``item`` now, whatever its ratio, on this
        thread; the checkpoint is written when it completes."""
        measured = self.log_to_clean(item)
        result = run_steps(self.task_for(measured).steps())
        self._finish(measured, result, write_checkpoint=True)
        return result

    def clean_filthiest_log(self) -> CleanResult | None:
        """One synchronous round: a pass over the filthiest due log, if any."""
        due = self.cleanable_logs()
        return self.clean_log(due[0].log) if due else None

    async def run(self) -> None:
        """Clean forever (the broker's background task); returns at once
        when the cleaner is disabled."""
        if not self.enabled:
            return
        executor = ThreadPoolExecutor(1, thread_name_prefix="kcore-log-cleaner")
        try:
            while True:
                due = self.cleanable_logs()
                if not due:
                    await asyncio.sleep(self.backoff_ms / 1000)
                    continue
                await self._clean_async(due[0], executor)
                await asyncio.sleep(0)
        finally:
            executor.shutdown(wait=False)

    async def _clean_async(self, measured: LogToClean, executor: ThreadPoolExecutor) -> None:
        key = (measured.log.topic, measured.log.partition)
        self.cleaning = measured.log
        try:
            task = self.task_for(measured)
            result = await drive_steps(task.steps(), executor)
            self._finish(measured, result, write_checkpoint=False)
            if result.completed:
                await drive_steps(self._write_checkpoint_steps(measured.log.dir.parent), executor)
        except (KafkaStorageError, OSError) as exc:
            log.error("cleaning %s-%d failed, retrying in %d s: %s", key[0], key[1],
                      FAILED_LOG_RETRY_MS // 1000, exc)
            self._failed_until[key] = self.clock() + FAILED_LOG_RETRY_MS
        except Exception:
            # A bug must not stop compaction of every other log.
            log.exception("cleaning %s-%d failed, retrying in %d s", key[0], key[1],
                          FAILED_LOG_RETRY_MS // 1000)
            self._failed_until[key] = self.clock() + FAILED_LOG_RETRY_MS
        finally:
            self.cleaning = None

    def _finish(self, measured: LogToClean, result: CleanResult, write_checkpoint: bool) -> None:
        item = measured.log
        key = (item.topic, item.partition)
        self.last_result = result
        if not result.completed:
            log.info("cleaning %s-%d stopped: the log changed under it", *key)
            return
        self._first_dirty[key] = max(result.end_offset, measured.first_dirty_offset)
        if result.next_delete_horizon_ms is None:
            self._horizons.pop(key, None)
        else:
            self._horizons[key] = result.next_delete_horizon_ms
        stats = result.stats
        log.info("cleaned %s-%d: dirty [%d, %d), %.1f MB in %.2f s (%.1f MB/s), %d of %d records "
                 "kept, %d segments into %d", key[0], key[1], measured.first_dirty_offset,
                 result.end_offset, stats.bytes_read / 1e6, stats.elapsed_s,
                 stats.bytes_read / 1e6 / max(stats.elapsed_s, 1e-9), stats.records_retained,
                 stats.records_read, stats.segments, stats.groups)
        if write_checkpoint:
            run_steps(self._write_checkpoint_steps(item.dir.parent))

    # -- checkpoint ----------------------------------------------------------------------------
    def _read_checkpoint(self, directory: Path) -> None:
        try:
            offsets = OffsetCheckpointFile(directory / CLEANER_OFFSET_CHECKPOINT).read()
        except KafkaStorageError as exc:
            log.warning("ignoring %s: %s", directory / CLEANER_OFFSET_CHECKPOINT, exc)
            return
        self._first_dirty.update(offsets)
        self._dir_of.update(dict.fromkeys(offsets, directory))

    def _write_checkpoint_steps(self, directory: Path) -> Generator[Offload, Any, None]:
        offsets = {key: offset for key, offset in self._first_dirty.items()
                   if self._dir_of.get(key) == directory
                   and self.log_manager.get_log(*key) is not None}
        yield Offload(OffsetCheckpointFile(directory / CLEANER_OFFSET_CHECKPOINT).write, (offsets,))


async def drive_steps(steps: Generator[Offload | None, Any, Any],
                      executor: ThreadPoolExecutor) -> Any:
    """Drive ``steps`` on the running loop: yield to it whenever a step
    run took STEP_BUDGET_S, run each Offload on ``executor``. Cancelled, it
    waits for a running offload (it may hold the task's files), then closes
    the steps so they remove their partial files."""
    value = None
    deadline = time.monotonic() + STEP_BUDGET_S
    try:
        while True:
            try:
                request = steps.send(value)
            except StopIteration as stop:
                return stop.value
            value = None
            if request is not None:
                value = await _offload(request, executor)
                deadline = time.monotonic() + STEP_BUDGET_S
            elif time.monotonic() >= deadline:
                await asyncio.sleep(0)
                deadline = time.monotonic() + STEP_BUDGET_S
    except BaseException:
        steps.close()
        raise


async def _offload(request: Offload, executor: ThreadPoolExecutor) -> Any:
    future = executor.submit(request.function, *request.args)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if not future.cancel():
            try:
                future.result()
            except Exception:
                pass
        raise

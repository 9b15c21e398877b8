"""Moving a replica to another log dir of this broker while it serves
(AlterReplicaLogDirs, KIP-113): Kafka's ReplicaAlterLogDirsThread.

The future log (``LogManager.create_future_log``) is filled from the
partition's current log by one asyncio task per moving partition. Each
step copies chunks of whole batches at the future log's end (up to
``CHUNK_BYTES`` each, for ``STEP_BUDGET_S`` of loop time), unchanged
(offsets, leader epochs and CRCs kept, so the future log learns the epochs
as a follower does) with the aborted transactions whose markers they
hold, and yields to the event loop: produce, fetch and replication go on
between steps. The partition applies its own truncations to the future
log; a log start that moved past the copy (retention, DeleteRecords)
restarts it there. Every ``SYNC_BYTES`` copied, the future log's files
are fdatasynced on a worker thread (while the task appends nothing), so
the flushes left on the loop, there and at the swap, find little to write.

When the future log ends where the current one does, the swap happens in
that same step (``LogManager.replace_current_with_future_log``, then
``Partition.replace_log``): no append can come between the check and the
swap, so no record is lost or copied twice. It waits while the log cleaner
is in a pass over the log (passes are short; none starts while the
replica moves), and while more than ``FINAL_SYNC_BYTES`` wait for the
worker thread's sync.

Measured (bench/bench_log_dir_move.py, 2 shared cores): ~1.6 ms of loop
time per MiB copied (read ~0.5 ms, append ~1.1 ms); moving 212 MB took
0.7-0.9 s (250-290 MB/s) with the loop's gaps at p50 0.15-0.8 ms, p99
10-16 ms (the flush on the loop after each worker sync, 4-8 ms, and the
swap, 8-17 ms), max 13-25 ms. Fsyncing the copy on the loop instead gave
p99 15-46 ms and gaps up to 2 s on the same machine.

An I/O error of either log reports its dir (log_dirs.py) and ends the
move; the failure handler takes that dir offline.

Not thread-safe: the event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from kcore._native import records as native_records
from kcore.log.errors import KafkaStorageError, LogError
from kcore.log.log import Log
from kcore.log.manager import LogManager
from kcore.replication.partition import Partition

log = logging.getLogger(__name__)

# One read and append of the copy: ~0.4 ms of pread + append.
CHUNK_BYTES = 256 << 10
# Loop time a step may take before it yields (the log cleaner's budget too).
STEP_BUDGET_S = 0.002
# Copied bytes synced on a worker thread at a time, and at most left for
# the flush on the loop at the swap (~8 ms of fsync there, measured ~5-10).
SYNC_BYTES = 8 << 20
FINAL_SYNC_BYTES = 1 << 20
# Caught up but the swap must wait (a cleaner pass is on the log): look again after this.
RETRY_S = 0.01

TopicPartition = tuple[str, int]


class LogDirMover:
    """One copy task per moving partition (see module doc)."""

    def __init__(self, log_manager: LogManager, busy: Callable[[Log], bool] | None = None):
        """``busy(log)``: a log cleaner pass is on ``log`` (no swap meanwhile)."""
        self.log_manager = log_manager
        self.busy = busy or (lambda item: False)
        self._tasks: dict[TopicPartition, asyncio.Task] = {}
        self.completed = 0  # moves that swapped, since start

    def start(self, partition: Partition) -> None:
        """Copy ``partition.log`` into ``partition.future_log`` (made by
        the caller), then swap."""
        key = partition.topic_partition
        running = self._tasks.get(key)
        if running is not None and not running.done():
            return
        self._tasks[key] = asyncio.get_running_loop().create_task(self._move(partition))

    def cancel(self, key: TopicPartition) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def moving(self) -> list[TopicPartition]:
        return sorted(key for key, task in self._tasks.items() if not task.done())

    def shutdown(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()

    async def _move(self, partition: Partition) -> None:
        key = partition.topic_partition
        unsynced = 0
        try:
            while (future := partition.future_log) is not None:
                copied = self._step(partition, future, unsynced <= FINAL_SYNC_BYTES)
                if copied < 0:
                    return
                unsynced += copied
                if unsynced >= SYNC_BYTES or (copied == 0 and unsynced > FINAL_SYNC_BYTES):
                    await self._sync(future)
                    unsynced = 0
                else:
                    await asyncio.sleep(0 if copied else RETRY_S)
        except KafkaStorageError as exc:
            log.error("%s-%d: the move to another log dir stopped: %s", key[0], key[1], exc)
            future = partition.future_log
            partition.future_log = None
            if future is not None and self.log_manager.get_future_log(*key) is future:
                self.log_manager.remove_future_log(*key)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]

    def _step(self, partition: Partition, future: Log, may_swap: bool) -> int:
        """Copy what the future log lacks (for a step's budget), then swap
        if that caught it up: bytes copied, -1 once swapped."""
        current = partition.log
        copied = 0
        deadline = time.monotonic() + STEP_BUDGET_S
        while (future.log_end_offset != current.log_end_offset
               or future.log_end_offset < current.log_start_offset):
            chunk = self._copy(current, future)
            copied += chunk
            if not chunk or time.monotonic() >= deadline:
                break
        if future.log_end_offset == current.log_end_offset and may_swap and \
                future.log_end_offset >= current.log_start_offset and not self.busy(current):
            self._swap(partition)
            return -1
        return copied

    async def _sync(self, future: Log) -> None:
        """fdatasync the future log's files on a worker thread (index
        entries written to them first), then flush it on the loop, where
        little is left: its recovery point moves up."""
        for segment in future.segments:
            if segment.next_offset > future.recovery_point:
                self._guarded(future, lambda segment=segment: segment.flush(sync=False))
        try:
            await asyncio.get_running_loop().run_in_executor(None, _sync_directory, future.dir)
        except OSError as exc:
            raise self._failure(future, exc) from exc
        self._guarded(future, future.flush)

    def _copy(self, current: Log, future: Log) -> int:
        if current.log_start_offset > future.log_end_offset:
            # The log start passed the copy (retention, DeleteRecords): it
            # begins again there.
            self._guarded(future, lambda: future.truncate_fully_and_start_at(
                current.log_start_offset))
        # One append must fit a segment of the future log.
        limit = min(CHUNK_BYTES, future.config.segment_bytes)
        data = self._guarded(current, lambda: _read_batches(current, future.log_end_offset, limit))
        if not data:
            return 0
        base_offset = native_records.parse_batch_header(data, 0).base_offset
        if base_offset < future.log_end_offset:
            # The log start is inside this batch: the copy holds it whole,
            # as the current log does.
            self._guarded(future, lambda: future.truncate_fully_and_start_at(base_offset))
        info = self._guarded(future, lambda: future.append(data, -1, assign_offsets=False,
                                                           defer_flush=True))
        for entry in current.collect_aborted_txns(info.first_offset, info.last_offset + 1):
            if info.first_offset <= entry.last_offset <= info.last_offset:
                self._guarded(future, lambda entry=entry: future.append_aborted_txn(entry))
        return len(data)

    def _swap(self, partition: Partition) -> None:
        """Raises KafkaStorageError (the log manager reported the failing
        dir and dropped the future log)."""
        topic, index = partition.topic_partition
        try:
            moved = self.log_manager.replace_current_with_future_log(topic, index)
        except KafkaStorageError:
            partition.future_log = None
            raise
        partition.replace_log(moved)
        self.completed += 1

    def _failure(self, item: Log, exc: BaseException) -> KafkaStorageError:
        """Report the I/O error ``exc`` of ``item``'s dir; the error to raise."""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.log_manager.dirs.report(item.dir, reason)
        return KafkaStorageError(f"{item.dir}: {reason}")

    def _guarded(self, item: Log, action: Callable):
        """Run ``action`` on ``item``; an I/O error reports the log's dir."""
        try:
            return action()
        except (KafkaStorageError, OSError) as exc:
            raise self._failure(item, exc) from exc
        except LogError as exc:  # e.g. corrupt data read back: the move cannot go on
            raise KafkaStorageError(f"{item.dir}: {exc}") from exc


def _read_batches(source: Log, offset: int, max_bytes: int) -> bytearray:
    """Whole batches of ``source`` from the one holding ``offset``, at most
    ``max_bytes`` (but at least one batch)."""
    data = bytearray()
    for piece in source.read(offset, max_bytes, min_one_message=True):
        data += os.pread(piece.fd, piece.size, piece.position)
    return data


def _sync_directory(path: Path) -> None:
    """fdatasync every file of ``path``, then the directory. A file removed
    meanwhile (a truncation on the loop) is skipped: it needs no sync."""
    for entry in os.scandir(path):
        try:
            fd = os.open(entry.path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

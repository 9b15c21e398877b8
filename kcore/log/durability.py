"""Group commit: the fsync behind ``flush.messages=1``, shared by every
batch appended while the previous one ran.

Durability policy (Kafka's settings keep their meaning, per topic
``flush.messages`` / ``flush.ms``, broker ``log.flush.interval.messages`` /
``log.flush.interval.ms``):

* ``flush.messages > 1`` (default Long.MAX_VALUE): page-cache writes. The
  log fsyncs itself every ``flush.messages`` messages and the broker's
  flusher every ``flush.ms``; acknowledgements never wait for either.
* ``flush.messages = 1``: nothing is acknowledged, nor visible to consumers
  (the high watermark stays behind it), before it is on disk. Kafka does
  that with one fsync per append; here an append only asks this syncer for
  a sync up to the log end offset and awaits it:

  - with the journal (the default; ``log.flush.journal.bytes`` > 0, see
    journal.py and journal_rounds.py): each append also adds its batches
    to a pending buffer; a round writes that buffer to the journal file
    and fdatasyncs it (a linked io_uring write + fdatasync, O_DIRECT where
    the file system allows), so one small sync covers every partition.
    Appends made meanwhile share the next round (up to 4 run at once).
    Segment files are fsynced at journal checkpoints; after a crash the
    journal puts back what they lost;
  - without it (journal off, not created yet, or failed), per-file rounds:
    per log at most one round is in flight, and it fdatasyncs every
    segment file holding offsets in [synced_offset, log_end_offset as the
    round starts), plus the directory when a segment file was created
    since the last round; batches appended while a round runs wait for the
    next. Rounds requested during one event-loop iteration are submitted
    together (one ``io_uring_enter``), and the kernel runs them in
    parallel.

Rounds run on a backend (sync_backends.py): io_uring where the kernel
allows it, otherwise a thread pool. This module holds the policy alone:
which files a round covers, who waits for which round, what a failure
does. The per-log state both paths share is ``LogSyncState``
(sync_state.py).

Segment files are written by ``Log.append`` with ``pwrite`` on the event
loop, not through io_uring: ``os.pwrite`` of 1 KiB costs 1.8 us against
19 us for a write submitted and reaped through the Python bindings
(liburing 2026.3.30, kernel 6.18), and a synchronous write keeps the log
end offset equal to what the file holds, so a failed write is cut off
(``LogSegment._write_all``) before anything else is appended after it. A
journal round is one write for many batches, so there the bindings' cost
is paid once per round.

After a failed fdatasync the kernel may have dropped the dirty pages, so
nothing past ``synced_offset`` is trusted: every waiter of that log fails
with ``SyncFailedError`` and the partition truncates back to its synced
offset (``Partition``), after which new appends start clean.

Concurrency contract: not thread-safe; every method runs on the event loop
that built the syncer (backend completions are delivered there). Files are
``dup``ed for the duration of each fsync, so a segment closed meanwhile
(topic deletion, shutdown) never has its descriptor number reused under an
in-flight fsync.
"""
from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import time
import weakref
from pathlib import Path

from typing_extensions import Buffer

from kcore.log.errors import KafkaStorageError, SyncFailedError
from kcore.log.journal import DEFAULT_JOURNAL_BYTES
from kcore.log.journal_rounds import JournalRounds
from kcore.log.log import Log
from kcore.log.sync_backends import THREAD_WORKERS, IoUringBackend, SyncBackend, ThreadBackend
from kcore.log.sync_state import LogSyncState, SyncListener
from kcore.metrics import LOG_FLUSH_STATS

log = logging.getLogger(__name__)

SYNCER_ENV = "KCORE_SYNCER"
SYNCER_CHOICES = ("auto", "io_uring", "thread", "inline")


class _Round:
    __slots__ = ("state", "target", "newest_base", "remaining", "error", "fds", "appends", "started")

    def __init__(self, state: LogSyncState, target: int, newest_base: int):
        self.state = state
        self.target = target
        self.newest_base = newest_base
        self.remaining = 0
        self.error = 0
        self.fds: list[tuple[int, bool]] = []  # (dup of the fd, datasync)
        self.appends = len(state.waiters)
        self.started = time.monotonic()


class GroupCommitSyncer:
    """Group commit over a backend; see the module docstring."""

    def __init__(self, backend: SyncBackend, loop: asyncio.AbstractEventLoop,
                 journal_dir: Path | str | None = None, journal_bytes: int = DEFAULT_JOURNAL_BYTES):
        self.backend = backend
        self._loop = loop
        # One journal for all partitions, in the first log dir; None: every
        # round fdatasyncs the partitions' own files.
        self.journal = JournalRounds(backend, loop, Path(journal_dir), journal_bytes,
                                     requeue=self._requeue, round_finished=self._journal_round_finished) \
            if journal_dir is not None and journal_bytes > 0 else None
        self._states: weakref.WeakKeyDictionary[Log, LogSyncState] = weakref.WeakKeyDictionary()
        self._ready: list[LogSyncState] = []
        self._tick_scheduled = False
        self._rounds_in_flight = 0
        self.rounds = 0        # per-file rounds started, one per log per round
        self._file_fsyncs = 0  # fsyncs of per-file rounds (files + directories)
        self.requests = 0      # sync() calls that had to wait
        self._closed = False

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def fsyncs(self) -> int:
        """Sync operations submitted: per-file rounds' fsyncs, journal
        rounds' write + fdatasync pairs and journal checkpoints' fsyncs."""
        return self._file_fsyncs + (self.journal.fsyncs if self.journal is not None else 0)

    def listen(self, log: Log, listener: SyncListener) -> None:
        """Call ``listener(synced_offset, error)`` synchronously whenever a
        sync of ``log`` completes (error None) or fails, before its waiters'
        futures are resolved; one call per round, however many waiters."""
        state = self._states.get(log)
        if state is None:
            state = self._states[log] = LogSyncState(log)
        state.listener = listener

    def synced_offset(self, log: Log) -> int:
        state = self._states.get(log)
        return state.synced_offset if state is not None else log.recovery_point

    def sync(self, log: Log, offset: int, records: Buffer | None = None,
             base_offset: int = -1) -> asyncio.Future:
        """A future resolved with the log's synced offset once everything
        below ``offset`` is on disk; it fails with SyncFailedError if an
        fsync fails and with KafkaStorageError if the log was closed.
        ``records``: the batches just appended at ``base_offset`` (ending at
        ``offset``), for the journal; without them the log's files are
        synced (or, for a journaled log, its pending entries)."""
        state = self._states.get(log)
        if state is None:
            state = self._states[log] = LogSyncState(log)
        future = self._loop.create_future()
        if self._closed:
            future.set_exception(KafkaStorageError("the syncer is closed (broker shutting down)"))
            return future
        if offset <= state.synced_offset:
            future.set_result(state.synced_offset)
            return future
        self.requests += 1
        journal = self.journal
        if journal is not None and journal.accepts(state) and (records is not None or state.journaled):
            if records is not None:
                journal.add(state, offset, base_offset, records, future)
            else:
                journal.add_waiter(state, offset, future)
            self._schedule_tick()
            return future
        state.waiters.append((offset, future))
        self._make_ready(state)
        return future

    def _requeue(self, state: LogSyncState, offset: int, future: asyncio.Future) -> None:
        """A journal waiter sent back to per-file rounds (the journal failed)."""
        state.waiters.append((offset, future))
        self._make_ready(state)

    def _journal_round_finished(self) -> None:
        """A journal round or checkpoint ended: start the next if entries wait."""
        if self.journal is not None and self.journal.busy:
            self._schedule_tick()

    def forget(self, log: Log) -> None:
        """Before ``log`` is deleted or truncated: a journal checkpoint if the
        journal holds entries of it (they must not be replayed later)."""
        state = self._states.get(log)
        if state is not None and self.journal is not None:
            self.journal.forget(state)

    def _schedule_tick(self) -> None:
        if not self._tick_scheduled:
            self._tick_scheduled = True
            self._loop.call_soon(self._tick)

    def _make_ready(self, state: LogSyncState) -> None:
        if state.in_flight or state.queued:
            return
        state.queued = True
        self._ready.append(state)
        self._schedule_tick()

    def _tick(self) -> None:
        self._tick_scheduled = False
        ready, self._ready = self._ready, []
        for state in ready:
            state.queued = False
            if not state.in_flight and state.waiters:
                self._start_round(state)
        if self.journal is not None:
            self.journal.start_round()
        self.backend.flush()

    def _start_round(self, state: LogSyncState) -> None:
        log_ = state.log
        target = log_.log_end_offset
        state.distrust_unsynced()
        segments = log_.segments
        if any(segment.fd < 0 for segment in segments):
            self._fail(state, KafkaStorageError(f"{log_.dir}: log is closed"))
            return
        newest_base = segments[-1].base_offset
        round_ = _Round(state, target, newest_base)
        try:
            for i, segment in enumerate(segments):
                next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
                if segment.base_offset < target and (next_base is None or next_base > state.synced_offset):
                    round_.fds.append((os.dup(segment.fd), True))
            if newest_base != state.newest_synced_base:
                round_.fds.append((os.open(log_.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), False))
        except OSError as exc:
            for fd, _ in round_.fds:
                os.close(fd)
            self._fail(state, SyncFailedError(f"cannot sync {log_.dir}: {exc.strerror}",
                                              exc.errno or errno.EIO))
            return
        state.in_flight = True
        self.rounds += 1
        self._rounds_in_flight += 1
        round_.remaining = len(round_.fds)
        if not round_.fds:
            self._finish(round_)
            return
        for fd, datasync in round_.fds:
            self._file_fsyncs += 1
            self.backend.submit(fd, datasync, functools.partial(self._op_done, round_, fd))

    def _op_done(self, round_: _Round, fd: int, error: int) -> None:
        os.close(fd)
        if error and not round_.error:
            round_.error = error
        round_.remaining -= 1
        if round_.remaining == 0:
            self._finish(round_)

    def _finish(self, round_: _Round) -> None:
        state = round_.state
        state.in_flight = False
        self._rounds_in_flight -= 1
        LOG_FLUSH_STATS.record_round(round_.appends, (time.monotonic() - round_.started) * 1000)
        if round_.error:
            message = f"fdatasync in {state.log.dir} failed: {os.strerror(round_.error)}"
            log.error("%s; unsynced data will be truncated", message)
            self._fail(state, SyncFailedError(message, round_.error))
            return
        state.synced_to(round_.target)
        state.newest_synced_base = round_.newest_base
        state.notify()
        log_end_offset = state.log.log_end_offset
        waiting = []
        for offset, future in state.waiters:
            if future.done():
                continue
            if offset <= state.synced_offset:
                future.set_result(state.synced_offset)
            elif offset > log_end_offset:
                future.set_exception(state.truncated_error(offset))
            else:
                waiting.append((offset, future))
        state.waiters = waiting
        if waiting:
            self._make_ready(state)

    def _fail(self, state: LogSyncState, exc: KafkaStorageError) -> None:
        waiters, state.waiters = state.waiters, []
        state.distrust_unsynced()
        state.notify(exc)
        for _, future in waiters:
            if not future.done():
                future.set_exception(exc)

    async def close(self) -> None:
        """Let in-flight rounds finish (30 s at most), then release the backend."""
        self._closed = True
        if self.journal is not None:
            self.journal.begin_close()
        deadline = self._loop.time() + 30
        while self._ready or self._rounds_in_flight or (self.journal is not None and self.journal.busy):
            if not self._tick_scheduled:
                self._tick()
            if self._loop.time() > deadline:
                log.error("group commit: rounds still in flight at shutdown after 30 s")
                break
            await asyncio.sleep(0.001)
        if self.journal is not None:
            await self.journal.close()
        self.backend.close()
        if self.requests:
            journal = self.journal
            log.info("group commit (%s): %d waiting sync requests served by %d rounds, %d fsyncs"
                     "%s", self.name, self.requests,
                     self.rounds + (journal.rounds if journal else 0), self.fsyncs,
                     f" (journal: {journal.rounds} rounds, {journal.checkpoints} checkpoints)"
                     if journal else "")


def open_syncer(loop: asyncio.AbstractEventLoop, choice: str | None = None,
                journal_dir: Path | str | None = None,
                journal_bytes: int = DEFAULT_JOURNAL_BYTES) -> tuple[GroupCommitSyncer | None, str]:
    """The syncer for ``choice`` (default: ``$KCORE_SYNCER`` or ``auto``)
    and a sentence saying which implementation serves flush.messages=1.

    ``auto`` tries io_uring and falls back to the thread pool; ``io_uring``
    raises when io_uring is unavailable; ``thread`` forces the fallback;
    ``inline`` gives None: no group commit, each append fsyncs on the event
    loop before its acknowledgement (Kafka's own flush.messages=1).
    ``journal_dir``: where the group-commit journal goes (journal.py; None
    or ``journal_bytes`` 0: partition files are fsynced instead)."""
    choice = (choice or os.environ.get(SYNCER_ENV) or "auto").strip().lower()
    if choice not in SYNCER_CHOICES:
        raise ValueError(f"{SYNCER_ENV}={choice!r}: expected one of {', '.join(SYNCER_CHOICES)}")
    if choice == "inline":
        return None, "durability: flush.messages=1 fsyncs each append inline (no group commit)"
    if choice in ("auto", "io_uring"):
        try:
            backend = IoUringBackend(loop)
        except (ImportError, OSError, RuntimeError) as exc:
            if choice == "io_uring":
                raise
            reason = f"io_uring unavailable ({type(exc).__name__}: {exc})"
        else:
            return (GroupCommitSyncer(backend, loop, journal_dir, journal_bytes),
                    f"durability: group commit over io_uring (liburing {backend.version})")
    else:
        reason = f"{SYNCER_ENV}=thread"
    return (GroupCommitSyncer(ThreadBackend(loop), loop, journal_dir, journal_bytes),
            f"durability: group commit over a {THREAD_WORKERS}-thread fdatasync pool; {reason}")

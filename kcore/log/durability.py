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

Backends:

* ``IoUringBackend`` (PyPI ``liburing``): an ``IORING_OP_FSYNC`` SQE with
  ``IORING_FSYNC_DATASYNC`` per file, or for a journal round an
  ``IORING_OP_WRITE`` linked (``IOSQE_IO_LINK``) to that fsync;
  completions signal an eventfd registered with the ring and watched by
  the event loop (``loop.add_reader``), so no thread of ours waits.
* ``ThreadBackend``: ``os.pwrite`` / ``os.fdatasync`` in a thread pool,
  results posted back with ``call_soon_threadsafe``. Used where io_uring
  is unavailable (import failure, kernel or seccomp refusal of
  ``io_uring_setup``, failed self test) or when ``KCORE_SYNCER=thread``.

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
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from typing_extensions import Buffer

from kcore.log.errors import KafkaStorageError, SyncFailedError
from kcore.log.journal import DEFAULT_JOURNAL_BYTES
from kcore.log.journal_rounds import JournalRounds
from kcore.log.log import Log
from kcore.metrics import LOG_FLUSH_STATS

log = logging.getLogger(__name__)

SYNCER_ENV = "KCORE_SYNCER"
SYNCER_CHOICES = ("auto", "io_uring", "thread", "inline")

# Up to this many fsyncs in flight per ring: one per segment file of a round
# (usually one per partition). Ops beyond it wait in a queue until
# completions free slots, so the completion queue (2x entries) never
# overflows.
RING_ENTRIES = 256
# fdatasync threads for the fallback: one per concurrently syncing partition
# up to 16 (the benchmark's partition count); a virtio disk with a
# write-back cache completes parallel flushes about as fast as one.
THREAD_WORKERS = 16

Callback = Callable[[int], None]  # receives 0 or an errno


class IoUringBackend:
    """fdatasync through io_uring; see the module docstring."""

    name = "io_uring"

    def __init__(self, loop: asyncio.AbstractEventLoop, entries: int = RING_ENTRIES):
        import liburing  # ImportError -> the caller falls back

        self._uring = liburing
        self._loop = loop
        self._entries = entries
        self._ring = liburing.Ring()
        liburing.io_uring_queue_init(entries, self._ring, 0)
        self._eventfd = -1
        try:
            self._eventfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            liburing.io_uring_register_eventfd(self._ring, self._eventfd)
            self._cqe = liburing.Cqe()
            self._callbacks: dict[int, Callback] = {}
            self._expected: dict[int, int] = {}  # write token -> bytes it must write
            self._next_token = 1
            self._queued: deque[tuple[int, bool, memoryview | None, int, Callback]] = deque()
            self._self_test()
            loop.add_reader(self._eventfd, self._reap)
        except BaseException:
            self._release()
            raise
        self.version = getattr(liburing, "__version__", "?")

    def _self_test(self) -> None:
        """One blocking fdatasync of a memory file: proves the kernel runs
        IORING_OP_FSYNC for us before the broker relies on it."""
        fd = os.memfd_create("kcore-uring-probe", os.MFD_CLOEXEC)
        try:
            os.write(fd, b"probe")
            sqe = self._uring.io_uring_get_sqe(self._ring)
            self._uring.io_uring_prep_fsync(sqe, fd, self._uring.IORING_FSYNC_DATASYNC)
            sqe.user_data = 0
            self._uring.io_uring_submit(self._ring)
            self._uring.io_uring_wait_cqe(self._ring, self._cqe)
            try:
                _ = self._cqe[0].res  # reading it raises OSError for a negative result
            finally:
                self._uring.io_uring_cq_advance(self._ring, 1)
                os.eventfd_read(self._eventfd)
        finally:
            os.close(fd)

    @property
    def in_flight(self) -> int:
        return len(self._callbacks)

    def submit(self, fd: int, datasync: bool, callback: Callback) -> None:
        """Queue one fsync; ``flush`` hands the queue to the kernel."""
        self._queued.append((fd, datasync, None, 0, callback))

    def submit_write_sync(self, fd: int, buffer: memoryview, position: int,
                          callback: Callback) -> None:
        """Queue a write of ``buffer`` at ``position`` linked to an
        fdatasync of ``fd`` (IOSQE_IO_LINK: the sync starts only after the
        whole write succeeded, and is cancelled otherwise). ``buffer`` must
        stay unchanged until ``callback`` runs; it may be page-aligned
        memory for an O_DIRECT ``fd`` (it is written in place, not copied)."""
        self._queued.append((fd, True, buffer, position, callback))

    def flush(self) -> None:
        uring, ring = self._uring, self._ring
        submitted = 0
        while self._queued and len(self._callbacks) + 2 <= self._entries:
            if uring.io_uring_sq_space_left(ring) < 2:
                break
            fd, datasync, buffer, position, callback = self._queued.popleft()
            if buffer is not None:
                callback = self._prep_write(fd, buffer, position, callback)
            sqe = uring.io_uring_get_sqe(ring)
            uring.io_uring_prep_fsync(sqe, fd, uring.IORING_FSYNC_DATASYNC if datasync else 0)
            sqe.user_data = self._token(callback)
            submitted += 1
        if submitted:
            uring.io_uring_submit(ring)

    def _token(self, callback: Callback) -> int:
        token = self._next_token
        self._next_token += 1
        self._callbacks[token] = callback
        return token

    def _prep_write(self, fd: int, buffer: memoryview, position: int, callback: Callback) -> Callback:
        """The write half of a linked pair; returns the callback for the
        fsync half. The write posts a completion only when it fails
        (IOSQE_CQE_SKIP_SUCCESS): one completion, one wake-up of the loop
        per round instead of two. A failed or short write cancels the
        linked fsync, whose completion then carries an error too."""
        uring = self._uring
        # The bindings take memory by reference only through an Iovec, which
        # must live until the write completes.
        iovec = uring.Iovec([buffer])
        write_error = [0]

        def write_failed(error: int) -> None:
            write_error[0] = error or errno.EIO

        sqe = uring.io_uring_get_sqe(self._ring)
        uring.io_uring_prep_writev(sqe, fd, iovec, position)
        sqe.flags |= uring.IOSQE_IO_LINK | uring.IOSQE_CQE_SKIP_SUCCESS
        write_token = self._token(write_failed)
        self._expected[write_token] = buffer.nbytes
        sqe.user_data = write_token

        def synced(error: int) -> None:
            # The write's completion, if any, came first (same ring, in order).
            self._callbacks.pop(write_token, None)
            self._expected.pop(write_token, None)
            callback(write_error[0] or error)

        synced.iovec = iovec  # type: ignore[attr-defined]  # alive until the round ends
        return synced

    def _reap(self) -> None:
        try:
            os.eventfd_read(self._eventfd)
        except BlockingIOError:
            pass
        uring, ring, cqe = self._uring, self._ring, self._cqe
        done: list[tuple[Callback, int]] = []
        # One completion at a time: the bindings' Cqe indexes past the first
        # entry without wrapping around the ring.
        while uring.io_uring_cq_ready(ring):
            uring.io_uring_peek_cqe(ring, cqe)
            entry = cqe[0]
            token = entry.user_data
            try:
                result = entry.res
                error = 0 if result >= 0 else errno.EIO
            except OSError as exc:  # the bindings raise a negative res as OSError
                result, error = -1, exc.errno or errno.EIO
            expected = self._expected.pop(token, None)
            if expected is not None and not error and result != expected:
                error = errno.EIO  # a short write leaves the entry torn
            uring.io_uring_cq_advance(ring, 1)
            callback = self._callbacks.pop(token, None)
            if callback is not None:
                done.append((callback, error))
        for callback, error in done:
            callback(error)
        if self._queued:
            self.flush()

    def close(self) -> None:
        """Wait (blocking) for in-flight fsyncs, then free the ring."""
        while self._callbacks:
            self._uring.io_uring_wait_cqe(self._ring, self._cqe)
            self._reap()
        self._release()

    def _release(self) -> None:
        if self._eventfd >= 0:
            try:
                self._loop.remove_reader(self._eventfd)
            except Exception:  # the loop may be closed already
                pass
            os.close(self._eventfd)
            self._eventfd = -1
        if self._ring is not None:
            self._uring.io_uring_queue_exit(self._ring)
            self._ring = None


def _fsync(fd: int, datasync: bool) -> int:
    try:
        (os.fdatasync if datasync else os.fsync)(fd)
    except OSError as exc:
        return exc.errno or errno.EIO
    return 0


def _write_sync(fd: int, buffer: memoryview, position: int) -> int:
    view = memoryview(buffer)
    try:
        done = 0
        while done < len(view):
            written = os.pwrite(fd, view[done:], position + done)
            if written == 0:
                return errno.EIO  # no progress: never loop forever
            done += written
        os.fdatasync(fd)
    except OSError as exc:
        return exc.errno or errno.EIO
    finally:
        view.release()
    return 0


class ThreadBackend:
    """fdatasync on a thread pool: the fallback (see the module docstring)."""

    name = "thread"

    def __init__(self, loop: asyncio.AbstractEventLoop, workers: int = THREAD_WORKERS):
        self._loop = loop
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kcore-fsync")
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def submit(self, fd: int, datasync: bool, callback: Callback) -> None:
        self._in_flight += 1
        future = self._pool.submit(_fsync, fd, datasync)
        future.add_done_callback(lambda done: self._post(callback, done.result()))

    def submit_write_sync(self, fd: int, buffer: memoryview, position: int,
                          callback: Callback) -> None:
        self._in_flight += 1
        future = self._pool.submit(_write_sync, fd, buffer, position)
        future.add_done_callback(lambda done: self._post(callback, done.result()))

    def _post(self, callback: Callback, error: int) -> None:
        try:
            self._loop.call_soon_threadsafe(self._complete, callback, error)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def _complete(self, callback: Callback, error: int) -> None:
        self._in_flight -= 1
        callback(error)

    def flush(self) -> None:
        """Ops start as they are submitted."""

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class _LogState:
    __slots__ = ("log", "synced_offset", "newest_synced_base", "in_flight", "queued", "waiters",
                 "journaled", "checkpointed_offset", "journal_name", "listener")

    def __init__(self, log: Log):
        self.log = log
        # Below the recovery point everything was fsynced by Log.flush.
        self.synced_offset = log.recovery_point
        self.newest_synced_base = -1  # the directory is synced on the first round
        self.in_flight = False
        self.queued = False
        self.waiters: list[tuple[int, asyncio.Future]] = []
        self.journaled = False  # syncs go through the journal (journal_rounds.py)
        self.checkpointed_offset = 0  # in the log's own files since the last journal checkpoint
        self.journal_name = b""  # the log's directory name, encoded, once journaled
        # listener(synced_offset, error): told first, before any waiter, of
        # every sync and failure (the partition moves its high watermark).
        self.listener: Callable[[int, BaseException | None], None] | None = None

    def notify(self, error: BaseException | None = None) -> None:
        if self.listener is not None:
            self.listener(self.synced_offset, error)


class _Round:
    __slots__ = ("state", "target", "newest_base", "remaining", "error", "fds", "appends", "started")

    def __init__(self, state: _LogState, target: int, newest_base: int):
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

    def __init__(self, backend: IoUringBackend | ThreadBackend, loop: asyncio.AbstractEventLoop,
                 journal_dir: Path | str | None = None, journal_bytes: int = DEFAULT_JOURNAL_BYTES):
        self.backend = backend
        self._loop = loop
        # One journal for all partitions, in the first log dir; None: every
        # round fdatasyncs the partitions' own files.
        self.journal = JournalRounds(self, Path(journal_dir), journal_bytes) \
            if journal_dir is not None and journal_bytes > 0 else None
        self._states: weakref.WeakKeyDictionary[Log, _LogState] = weakref.WeakKeyDictionary()
        self._ready: list[_LogState] = []
        self._tick_scheduled = False
        self._rounds_in_flight = 0
        self.rounds = 0        # rounds started, one per log per round
        self.fsyncs = 0        # fsync operations submitted (files + directories)
        self.requests = 0      # sync() calls that had to wait
        self._closed = False

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def closed(self) -> bool:
        return self._closed

    def listen(self, log: Log, listener: Callable[[int, BaseException | None], None]) -> None:
        """Call ``listener(synced_offset, error)`` synchronously whenever a
        sync of ``log`` completes (error None) or fails, before its waiters'
        futures are resolved; one call per round, however many waiters."""
        state = self._states.get(log)
        if state is None:
            state = self._states[log] = _LogState(log)
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
            state = self._states[log] = _LogState(log)
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

    def requeue(self, state: _LogState, offset: int, future: asyncio.Future) -> None:
        """A journal waiter sent back to per-file rounds (the journal failed)."""
        state.waiters.append((offset, future))
        self._make_ready(state)

    def round_finished(self) -> None:
        """A journal round ended: start the next if entries wait."""
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

    def _make_ready(self, state: _LogState) -> None:
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

    def _start_round(self, state: _LogState) -> None:
        log_ = state.log
        target = log_.log_end_offset
        state.synced_offset = min(state.synced_offset, target)
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
            self.fsyncs += 1
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
        state.synced_offset = max(state.synced_offset, round_.target)
        state.newest_synced_base = round_.newest_base
        state.notify()
        log_end_offset = state.log.log_end_offset
        waiting = []
        for offset, future in state.waiters:
            if future.done():
                continue
            if offset <= state.synced_offset:
                future.set_result(state.synced_offset)
            elif offset > log_end_offset:  # truncated away before it was synced
                future.set_exception(KafkaStorageError(
                    f"{state.log.dir}: offsets below {offset} were truncated before they were synced"))
            else:
                waiting.append((offset, future))
        state.waiters = waiting
        if waiting:
            self._make_ready(state)

    def _fail(self, state: _LogState, exc: KafkaStorageError) -> None:
        waiters, state.waiters = state.waiters, []
        state.synced_offset = min(state.synced_offset, state.log.log_end_offset)
        state.notify(exc)
        for _, future in waiters:
            if not future.done():
                future.set_exception(exc)

    async def close(self) -> None:
        """Let in-flight rounds finish (30 s at most), then release the backend."""
        self._closed = True
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

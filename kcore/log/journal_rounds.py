"""Group-commit rounds through the journal (journal.py) for the syncer.

A log switches to the journal at its first durable append after the
journal is ready, provided none of its per-file rounds is pending (so no
earlier append waits on another path). From then on each append adds an
entry (the batches, copied) to the pending buffer. A round writes the
whole buffer at the journal's position and fdatasyncs the file (backend
``submit_write_sync``: a linked io_uring write + fdatasync, or both in a
worker thread); up to MAX_ROUNDS_IN_FLIGHT run at once, and they end in
the order they started, each making its waiters durable.

A journal failure fails that round's waiters and those of every later
round (the partitions truncate, as after any failed fsync), sends pending
waiters back to per-file rounds and switches the journal off until the
broker restarts.

Its interface to the syncer is narrow: the backend it submits to, the
event loop, and two callbacks (``requeue`` a waiter to per-file rounds,
``round_finished`` to start the next round); the per-log state it shares
is ``LogSyncState`` (sync_state.py), moved only through its methods and
the journal's own fields.

Not thread-safe: runs on the syncer's event loop.
"""
from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from typing_extensions import Buffer

from kcore.log.errors import LogError, SyncFailedError
from kcore.log.journal import Journal, RoundBuffer
from kcore.log.sync_backends import SyncBackend
from kcore.log.sync_state import LogSyncState
from kcore.metrics import LOG_FLUSH_STATS

log = logging.getLogger(__name__)

# Rounds written and fdatasynced at once. One at a time, an append waits for
# the round in flight and then its own (two write+fdatasync times, ~0.3-0.6
# ms here); producers with 5 requests in flight per connection then stall on
# that latency. Several rounds in flight let each start at once; the disk
# takes parallel writes and flushes about as fast as one.
MAX_ROUNDS_IN_FLIGHT = 4

Waiter = tuple[LogSyncState, int, asyncio.Future]  # (log, offset to reach, future)


class _Round:
    __slots__ = ("buffer", "view", "waiters", "finished", "error", "started")

    def __init__(self, buffer: RoundBuffer, view: memoryview | None, waiters: list[Waiter]):
        self.buffer = buffer
        self.view = view
        self.waiters = waiters
        self.finished = False
        self.error = 0
        self.started = time.monotonic()


class _Checkpoint:
    """fdatasyncs of the journaled logs' files in flight (through the
    backend), then the header moves to the next generation."""
    __slots__ = ("waiters", "targets", "remaining", "error")

    def __init__(self, waiters: list[Waiter]):
        self.waiters = waiters
        self.targets: dict[LogSyncState, int] = {}  # log end offset each log's fsyncs cover
        self.remaining = 0
        self.error = 0


class JournalRounds:
    """The journal side of a GroupCommitSyncer (see the module docstring).
    ``status``: 'absent' (not created yet), 'creating', 'ready', 'failed'."""

    def __init__(self, backend: SyncBackend, loop: asyncio.AbstractEventLoop, directory: Path,
                 size: int, *, requeue: Callable[[LogSyncState, int, asyncio.Future], None],
                 round_finished: Callable[[], None]):
        self._backend = backend
        self._loop = loop
        self._requeue = requeue
        self._round_finished = round_finished
        self._closing = False
        self.directory = Path(directory)
        self.size = size
        self.journal: Journal | None = None
        self.direct = True  # O_DIRECT rounds where the file system takes them (Journal)
        self.status = "absent"
        self._creating: asyncio.Future | None = None
        self._buffer = RoundBuffer()      # entries of the next round
        self._spares: list[RoundBuffer] = []  # buffers of ended rounds, for reuse
        self._waiters: list[Waiter] = []
        self._in_flight: deque[_Round] = deque()  # oldest first
        self._checkpoint: _Checkpoint | None = None
        self._hold = False  # after a checkpoint, no round until the old ones ended
        self._in_generation: set[LogSyncState] = set()  # logs with entries since the last checkpoint
        self.rounds = 0
        self.checkpoints = 0
        self.fsyncs = 0  # write + fdatasync pairs of rounds, fsyncs of checkpoints

    # -- admission ----------------------------------------------------------------
    def accepts(self, state: LogSyncState) -> bool:
        if self.status == "absent":
            self._start_creating()
        if self.status != "ready":
            return False
        return state.journaled or not state.file_sync_pending

    async def prepare(self) -> None:
        """Create the journal now (the broker's default is flush.messages=1)
        rather than at the first durable append."""
        if self.status == "absent":
            self._start_creating()
        if self._creating is not None:
            try:
                await asyncio.shield(self._creating)
            except Exception:  # logged by _created
                pass

    def _start_creating(self) -> None:
        self.status = "creating"
        self._creating = self._loop.run_in_executor(None, Journal.create, self.directory,
                                                    self.size, self.direct)
        self._creating.add_done_callback(self._created)

    def _created(self, future: asyncio.Future) -> None:
        self._creating = None
        if future.cancelled():
            self.status = "failed"
            return
        exc = future.exception()
        if exc is not None:
            self.status = "failed"
            log.warning("group commit journal unavailable, fsyncing partition files instead: %s", exc)
            return
        self.journal = future.result()
        if self._closing:
            self.journal.close()
            return
        self.status = "ready"
        log.info("group commit journal %s (%d MiB) in use", self.journal.path, self.size >> 20)

    # -- entries and waiters ---------------------------------------------------------
    def add(self, state: LogSyncState, offset: int, base_offset: int, records: Buffer,
            future: asyncio.Future) -> None:
        """Journal ``records`` (appended to the log at ``base_offset``); the
        future resolves once they are on disk."""
        if not state.journaled:
            # Everything before this entry was synced by per-file rounds or
            # predates flush.messages=1: checkpoints start here.
            state.journaled = True
            state.checkpointed_offset = base_offset
            state.journal_name = state.log.dir.name.encode()
        self._in_generation.add(state)
        assert self.journal is not None  # accepts() let this log in: the journal is open
        self._buffer.append(state.journal_name, base_offset, records, self.journal.generation)
        self._waiters.append((state, offset, future))

    def add_waiter(self, state: LogSyncState, offset: int, future: asyncio.Future) -> None:
        """A journaled log's sync without new records (e.g. a retried
        duplicate): its entries are pending or in flight already."""
        self._waiters.append((state, offset, future))

    @property
    def busy(self) -> bool:
        return bool(self._in_flight) or self._checkpoint is not None or bool(self._waiters)

    # -- rounds -------------------------------------------------------------------
    def start_round(self) -> None:
        """Write the pending entries as the next round, unless
        MAX_ROUNDS_IN_FLIGHT are in flight or a checkpoint runs."""
        if len(self._in_flight) >= MAX_ROUNDS_IN_FLIGHT or self._checkpoint is not None \
                or not self._waiters or self.journal is None:
            return
        if self._hold:
            if self._in_flight:
                return  # rounds of the old generation still write where new ones would
            self._hold = False
        buffer = self._buffer
        if not len(buffer):  # only waiters whose entries were journaled already
            if self._in_flight:
                self._in_flight[-1].waiters.extend(self._waiters)
            else:
                self._resolve(self._waiters)
            self._waiters = []
            return
        if not self.journal.fits(buffer.padded_size()):
            if self._in_flight:
                return  # the checkpoint starts once the rounds in flight ended
            # Their batches are in the logs: the checkpoint's fsyncs cover them.
            waiters, self._waiters = self._waiters, []
            buffer.reset()
            self._start_checkpoint(waiters)
            return
        waiters, self._waiters = self._waiters, []
        self._buffer = self._spares.pop() if self._spares else RoundBuffer()
        view = buffer.seal(self.journal.generation)
        position = self.journal.position
        self.journal.position += len(view)
        round_ = _Round(buffer, view, waiters)
        self._in_flight.append(round_)
        self.rounds += 1
        self.fsyncs += 1
        self._backend.submit_write_sync(self.journal.fd, view, position,
                                        lambda error: self._done(round_, error))

    def _done(self, round_: _Round, error: int) -> None:
        """Rounds end in the order they started: a round's waiters are
        durable only once every earlier round is (replay stops at the first
        torn entry), so a finished round waits for those before it, and a
        failed one fails every round after it."""
        round_.error = error
        round_.finished = True
        LOG_FLUSH_STATS.record_round(len(round_.waiters), (time.monotonic() - round_.started) * 1000)
        while self._in_flight and self._in_flight[0].finished:
            first = self._in_flight.popleft()
            first.view = None  # the backend drops its reference too
            first.buffer.reset()
            self._spares.append(first.buffer)
            if first.error or self.status == "failed":
                cause = OSError(first.error or errno.EIO, os.strerror(first.error or errno.EIO))
                self._fail(first.waiters, cause)
            else:
                self._resolve(first.waiters)
        if self.status == "failed" and not self._in_flight and self.journal is not None:
            self.journal.close()
            self.journal = None
        self._round_finished()

    def _resolve(self, waiters: list[Waiter]) -> None:
        """Their entries are durable: move each log's synced offset, tell
        its listener once, then answer the waiters."""
        synced = {}
        for state, offset, _ in waiters:
            if offset <= state.log.log_end_offset:
                state.synced_to(offset)
                synced[state] = True
        for state in synced:
            state.notify()
        for state, offset, future in waiters:
            if future.done():
                continue
            if offset > state.synced_offset:
                future.set_exception(state.truncated_error(offset))
            else:
                future.set_result(state.synced_offset)

    def _fail(self, waiters: list[Waiter], cause: BaseException) -> None:
        """Fail ``waiters``, switch the journal off and send what was
        pending back to per-file rounds."""
        number = getattr(cause, "errno", None) or errno.EIO
        message = f"group commit journal {self.directory}: {cause}"
        log.error("%s; unsynced data will be truncated and the journal is off until restart", message)
        error = SyncFailedError(message, number)
        failed = {}
        for state, _, _ in waiters:
            state.distrust_unsynced()
            failed[state] = True
        self.status = "failed"
        pending, self._waiters = self._waiters, []
        self._buffer.reset()
        for state in self._in_generation:
            state.journaled = False
        for state, offset, future in pending:
            state.journaled = False
            self._requeue(state, offset, future)
        self._in_generation.clear()
        if not self._in_flight and self.journal is not None:
            self.journal.close()
            self.journal = None
        for state in failed:  # the partitions truncate what was not synced
            state.notify(error)
        for _, _, future in waiters:
            if not future.done():
                future.set_exception(error)

    # -- checkpoints --------------------------------------------------------------
    def checkpoint(self) -> None:
        """Make every journaled log durable in its own files and start a
        new generation (blocking; before a journaled log is deleted or
        truncated). Pending waiters are resolved: their logs were flushed."""
        if self.journal is None or not (self._in_generation or self._checkpoint is not None):
            return
        waiters, self._waiters = self._waiters, []
        self._buffer.reset()
        self._hold = bool(self._in_flight)
        try:
            self._checkpoint_logs_and_header()
        except (LogError, OSError) as exc:
            self._fail(waiters, exc)
            return
        self._resolve(waiters)

    def _start_checkpoint(self, waiters: list[Waiter]) -> None:
        """The journal is full: fdatasync every journaled log's files with
        data since its last checkpoint (and its directory, for new
        segments) through the backend, off the event loop; rounds wait."""
        checkpoint = _Checkpoint(waiters)
        flushed, self._in_generation = self._in_generation, set()
        operations: list[tuple[int, bool]] = []
        try:
            for state in flushed:
                log_ = state.log
                segments = log_.segments
                if any(segment.fd < 0 for segment in segments):
                    continue  # closed: deleted (forget() ran) or shutting down
                end = log_.log_end_offset
                for i, segment in enumerate(segments):
                    next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
                    if segment.base_offset < end and (next_base is None
                                                      or next_base > state.checkpointed_offset):
                        operations.append((os.dup(segment.fd), True))
                operations.append((os.open(log_.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC),
                                   False))
                checkpoint.targets[state] = end
        except OSError as exc:
            for fd, _ in operations:
                os.close(fd)
            self._fail(waiters, exc)
            return
        self._checkpoint = checkpoint
        checkpoint.remaining = len(operations)
        if not operations:
            self._checkpoint_done(checkpoint)
            return
        for fd, datasync in operations:
            self.fsyncs += 1
            self._backend.submit(
                fd, datasync, functools.partial(self._checkpoint_op_done, checkpoint, fd))

    def _checkpoint_op_done(self, checkpoint: _Checkpoint, fd: int, error: int) -> None:
        os.close(fd)
        checkpoint.error = checkpoint.error or error
        checkpoint.remaining -= 1
        if checkpoint.remaining == 0:
            self._checkpoint_done(checkpoint)

    def _checkpoint_done(self, checkpoint: _Checkpoint) -> None:
        self._checkpoint = None
        try:
            if checkpoint.error:
                raise OSError(checkpoint.error, os.strerror(checkpoint.error))
            if self.journal is not None:
                self.journal.checkpoint_header()  # ~150 us: one small write of a written block
        except (LogError, OSError) as exc:
            self._fail(checkpoint.waiters, exc)
        else:
            for state, end in checkpoint.targets.items():
                state.checkpointed_offset = max(state.checkpointed_offset, end)
            self.checkpoints += 1
            self._resolve(checkpoint.waiters)
        self._round_finished()

    def _checkpoint_logs_and_header(self) -> None:
        # With a checkpoint in flight, its logs too: their entries are still
        # valid until it ends.
        in_flight = self._checkpoint.targets if self._checkpoint is not None else {}
        for state in self._in_generation | set(in_flight):
            if all(segment.fd >= 0 for segment in state.log.segments):
                state.log.flush()
                state.checkpointed_offset = state.log.log_end_offset
        assert self.journal is not None  # checkpoints run on an open journal only
        self.journal.checkpoint_header()
        self._in_generation.clear()
        self.checkpoints += 1

    def forget(self, state: LogSyncState) -> None:
        """Before ``state``'s log is deleted or truncated: no entry of it may
        outlive this in the journal's current generation."""
        if self.status == "ready" and (state in self._in_generation or (
                self._checkpoint is not None and state in self._checkpoint.targets)):
            self.checkpoint()
        self._in_generation.discard(state)

    def begin_close(self) -> None:
        """The syncer is closing: a journal still being created is closed
        as soon as it is ready, never used."""
        self._closing = True

    async def close(self) -> None:
        if self._creating is not None:
            try:
                await self._creating
            except Exception:  # logged by _created
                pass
        if self.journal is not None and not self._in_flight:
            self.journal.close()
            self.journal = None

"""Group-commit rounds through the journal (journal.py) for the syncer.

A log switches to the journal at its first durable append after the
journal is ready, provided none of its per-file rounds is pending (so no
earlier append waits on another path). From then on each append adds an
entry (the batches, copied) to the pending buffer; one round at a time
writes the whole buffer at the journal's position and fdatasyncs the file
(backend ``submit_write_sync``: a linked io_uring write + fdatasync, or
both in a worker thread), and then every waiter it carried is durable.

A journal failure fails that round's waiters (the partitions truncate, as
after any failed fsync), sends pending waiters back to per-file rounds and
switches the journal off until the broker restarts.

Not thread-safe: runs on the syncer's event loop.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
from pathlib import Path
from typing import Any

from kcore.log.errors import KafkaStorageError, LogError, SyncFailedError
from kcore.log.journal import Journal, append_unsealed, seal_entry

log = logging.getLogger(__name__)


class _Round:
    __slots__ = ("buffer", "waiters")

    def __init__(self, buffer: bytearray, waiters: list):
        self.buffer = buffer
        self.waiters = waiters


class JournalRounds:
    """The journal side of a GroupCommitSyncer (see the module docstring).
    ``status``: 'absent' (not created yet), 'creating', 'ready', 'failed'."""

    def __init__(self, syncer: Any, directory: Path, size: int):
        self._syncer = syncer
        self.directory = Path(directory)
        self.size = size
        self.journal: Journal | None = None
        self.status = "absent"
        self._creating: asyncio.Future | None = None
        self._buffer = bytearray()
        self._entries: list[int] = []     # start of each entry in _buffer
        self._waiters: list[tuple[Any, int, asyncio.Future]] = []
        self._in_flight: _Round | None = None
        self._in_generation: set = set()  # states with entries since the last checkpoint
        self.rounds = 0
        self.checkpoints = 0

    # -- admission ----------------------------------------------------------------
    def accepts(self, state: Any) -> bool:
        if self.status == "absent":
            self._start_creating()
        if self.status != "ready":
            return False
        return state.journaled or (not state.in_flight and not state.waiters)

    def _start_creating(self) -> None:
        self.status = "creating"
        loop = self._syncer.loop
        self._creating = loop.run_in_executor(None, Journal.create, self.directory, self.size)
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
        if self._syncer.closed:
            self.journal.close()
            return
        self.status = "ready"
        log.info("group commit journal %s (%d MiB) in use", self.journal.path, self.size >> 20)

    # -- entries and waiters ---------------------------------------------------------
    def add(self, state: Any, offset: int, base_offset: int, records: Any,
            future: asyncio.Future) -> None:
        """Journal ``records`` (appended to the log at ``base_offset``); the
        future resolves once they are on disk."""
        state.journaled = True
        self._in_generation.add(state)
        self._entries.append(append_unsealed(self._buffer, state.log.dir.name, base_offset, records))
        self._waiters.append((state, offset, future))

    def add_waiter(self, state: Any, offset: int, future: asyncio.Future) -> None:
        """A journaled log's sync without new records (e.g. a retried
        duplicate): its entries are pending or in flight already."""
        self._waiters.append((state, offset, future))

    @property
    def busy(self) -> bool:
        return self._in_flight is not None or bool(self._waiters)

    # -- rounds -------------------------------------------------------------------
    def start_round(self) -> None:
        if self._in_flight is not None or not self._waiters or self.journal is None:
            return
        buffer, entries, waiters = self._buffer, self._entries, self._waiters
        self._buffer, self._entries, self._waiters = bytearray(), [], []
        if not buffer:
            self._resolve(waiters)  # everything journaled before them is synced
            return
        if not self.journal.fits(len(buffer)):
            try:
                self._checkpoint_logs_and_header()
            except (LogError, OSError) as exc:
                self._fail(waiters, exc)
                return
            self._resolve(waiters)  # the checkpoint flushed their logs
            return
        generation = self.journal.generation
        for start in entries:
            seal_entry(buffer, start, generation)
        position = self.journal.position
        self.journal.position += len(buffer)
        round_ = _Round(buffer, waiters)
        self._in_flight = round_
        self.rounds += 1
        self._syncer.fsyncs += 1
        self._syncer.backend.submit_write_sync(self.journal.fd, buffer, position,
                                               lambda error: self._done(round_, error))

    def _done(self, round_: _Round, error: int) -> None:
        self._in_flight = None
        if error:
            self._fail(round_.waiters, OSError(error, os.strerror(error)))
        else:
            self._resolve(round_.waiters)
        if self.status == "failed" and self.journal is not None:
            self.journal.close()
            self.journal = None
        self._syncer.round_finished()

    def _resolve(self, waiters: list) -> None:
        for state, offset, future in waiters:
            if future.done():
                continue
            if offset > state.log.log_end_offset:  # truncated away before it was synced
                future.set_exception(KafkaStorageError(
                    f"{state.log.dir}: offsets below {offset} were truncated before they were synced"))
                continue
            state.synced_offset = max(state.synced_offset, offset)
            future.set_result(state.synced_offset)

    def _fail(self, waiters: list, cause: BaseException) -> None:
        """Fail ``waiters``, switch the journal off and send what was
        pending back to per-file rounds."""
        number = getattr(cause, "errno", None) or errno.EIO
        message = f"group commit journal {self.directory}: {cause}"
        log.error("%s; unsynced data will be truncated and the journal is off until restart", message)
        error = SyncFailedError(message, number)
        for state, _, future in waiters:
            state.synced_offset = min(state.synced_offset, state.log.log_end_offset)
            if not future.done():
                future.set_exception(error)
        self.status = "failed"
        pending, self._waiters = self._waiters, []
        self._buffer, self._entries = bytearray(), []
        for state in self._in_generation:
            state.journaled = False
        for state, offset, future in pending:
            state.journaled = False
            self._syncer.requeue(state, offset, future)
        self._in_generation.clear()
        if self._in_flight is None and self.journal is not None:
            self.journal.close()
            self.journal = None

    # -- checkpoints --------------------------------------------------------------
    def checkpoint(self) -> None:
        """Make every journaled log durable in its own files and start a
        new generation (blocking; before a journaled log is deleted or
        truncated). Pending waiters are resolved: their logs were flushed."""
        if self.journal is None or not self._in_generation:
            return
        waiters, self._waiters = self._waiters, []
        self._buffer, self._entries = bytearray(), []
        try:
            self._checkpoint_logs_and_header()
        except (LogError, OSError) as exc:
            self._fail(waiters, exc)
            return
        self._resolve(waiters)

    def _checkpoint_logs_and_header(self) -> None:
        for state in list(self._in_generation):
            if all(segment.fd >= 0 for segment in state.log.segments):
                state.log.flush()
        self.journal.checkpoint_header()
        self._in_generation.clear()
        self.checkpoints += 1

    def forget(self, state: Any) -> None:
        """Before ``state``'s log is deleted or truncated: no entry of it may
        outlive this in the journal's current generation."""
        if state in self._in_generation:
            self.checkpoint()
        self._in_generation.discard(state)

    async def close(self) -> None:
        if self._creating is not None:
            try:
                await self._creating
            except Exception:  # logged by _created
                pass
        if self.journal is not None and self._in_flight is None:
            self.journal.close()
            self.journal = None

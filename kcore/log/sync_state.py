"""What group commit knows of one log: how far it is on disk, who is
waiting for more, and which of the two paths its syncs take (per-file
rounds in durability.py, or the journal in journal_rounds.py).

Who writes what:

* ``synced_offset`` moves only through ``synced_to`` (a round made offsets
  durable) and ``distrust_unsynced`` (a round failed, or the log was
  truncated below it); both paths call them, and ``notify`` then tells the
  partition (its listener) before any waiter is answered.
* ``in_flight``, ``queued``, ``waiters`` and ``newest_synced_base`` belong
  to the per-file rounds of ``GroupCommitSyncer``; the journal reads them
  only through ``file_sync_pending``.
* ``journaled``, ``checkpointed_offset`` and ``journal_name`` belong to
  ``JournalRounds``; the syncer reads ``journaled`` to route a sync.

Not thread-safe: used on the syncer's event loop only.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from kcore.log.errors import KafkaStorageError
from kcore.log.log import Log

# listener(synced_offset, error): told first, before any waiter, of every
# sync and failure (the partition moves its high watermark).
SyncListener = Callable[[int, BaseException | None], None]


class LogSyncState:
    """One log's progress to disk (see the module docstring)."""

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
        self.listener: SyncListener | None = None

    @property
    def file_sync_pending(self) -> bool:
        """A per-file round runs or waits for this log."""
        return self.in_flight or bool(self.waiters)

    def synced_to(self, offset: int) -> None:
        """Everything below ``offset`` is on disk."""
        self.synced_offset = max(self.synced_offset, offset)

    def distrust_unsynced(self) -> None:
        """The synced offset never passes the log end (after a truncation,
        or a failed sync whose pages the kernel may have dropped)."""
        self.synced_offset = min(self.synced_offset, self.log.log_end_offset)

    def notify(self, error: BaseException | None = None) -> None:
        if self.listener is not None:
            self.listener(self.synced_offset, error)

    def truncated_error(self, offset: int) -> KafkaStorageError:
        """For a waiter of ``offset`` whose batches were cut off the log
        before a round made them durable."""
        return KafkaStorageError(
            f"{self.log.dir}: offsets below {offset} were truncated before they were synced")

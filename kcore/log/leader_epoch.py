"""The leader epoch cache of one partition: where each leader epoch starts.

Followers truncate to the leader's epoch boundary after a leader change
(KIP-101, KIP-279): a follower asks OffsetForLeaderEpoch(its latest epoch)
and the leader answers from this cache with ``end_offset_for``.

File ``<partition dir>/leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``
in checkpoints.py), entries ascending in both fields::

    0            <- version
    2            <- number of entries
    0 0          <- leader_epoch start_offset
    3 1200

Source: Kafka ``LeaderEpochFileCache`` (storage/.../internals/epoch/).
"""
from __future__ import annotations

import bisect
import logging
from operator import itemgetter
from pathlib import Path

from kcore.log.checkpoints import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile, StagedRenames
from kcore.log.errors import KafkaStorageError

log = logging.getLogger(__name__)

# Kafka OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_EPOCH = itemgetter(0)
_START_OFFSET = itemgetter(1)

EpochEntry = tuple[int, int]  # (leader_epoch, start_offset)


class LeaderEpochCache:
    """``(leader_epoch, start_offset)`` entries, strictly increasing in both,
    persisted in the checkpoint file on every change. See the module
    docstring for the file format.

    A change is made in memory; ``flush`` writes the whole file
    (temporary file, fsync, rename, directory fsync) and the Log calls it
    before its recovery point moves, as Kafka 3.7 defers the epoch
    file's fsync to the log flush (KAFKA-15046). Every start makes each
    partition a leader at a new epoch: one file write per partition was
    0.5-1 s of a start with 2,000 partitions here. What the file lacks
    after a crash is safe to lack: every batch of a changed epoch was
    appended after the change, so it lies past the recovery point of the
    last flush, recovery checks it and relearns its epoch
    (``learn_leader_epochs``), as for batches a crash brought back after
    a truncation. A file ahead of the log (written before a truncation)
    is cut by ``Log.open``.

    A missing file is an empty cache; an unreadable or malformed one is an
    empty cache and a warning, never a failed start.

    Not thread-safe: owned by its Log, used on the partition's event loop;
    no method awaits. ``latest_epoch`` is a plain attribute (read-only by
    contract, UNDEFINED_EPOCH when empty) because every produce compares
    against it.
    """

    def __init__(self, checkpoint: LeaderEpochCheckpointFile):
        self.checkpoint = checkpoint
        self._unflushed = False  # changed since the file was last written
        self._entries: list[EpochEntry] = []
        self.latest_epoch = UNDEFINED_EPOCH
        self._set(self._load())

    @classmethod
    def in_directory(cls, directory: Path | str) -> LeaderEpochCache:
        """The cache of the partition directory ``directory``."""
        directory = directory if isinstance(directory, Path) else Path(directory)
        return cls(LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT))

    def _load(self) -> list[EpochEntry]:
        try:
            stored = self.checkpoint.read()
        except KafkaStorageError as exc:
            log.warning("%s; starting with an empty leader epoch cache", exc)
            return []
        entries: list[EpochEntry] = []
        for epoch, start_offset in stored:
            if epoch < 0 or start_offset < 0:
                log.warning("%s: negative entry %d %d; starting with an empty leader epoch cache",
                            self.checkpoint.path, epoch, start_offset)
                return []
            # Kafka loads through assign too, so a non-monotonic file is repaired, not trusted.
            entries = _after_assign(entries, epoch, start_offset, self.checkpoint.path)
        return entries

    # -- reads --------------------------------------------------------------------------
    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def previous_epoch(self) -> int | None:
        """The epoch before the latest one, or None."""
        return self._entries[-2][0] if len(self._entries) > 1 else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in force at ``offset`` (the last one starting at or
        before it), or None before the first entry."""
        i = bisect.bisect_right(self._entries, offset, key=_START_OFFSET)
        return self._entries[i - 1][0] if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end_offset) for OffsetForLeaderEpoch: the largest epoch
        <= ``requested_epoch`` and the start offset of the first epoch
        above ``requested_epoch``. The latest epoch ends at
        ``log_end_offset``. Below the earliest entry: (requested_epoch, the
        earliest start offset), as that data is gone from the log anyway.
        UNDEFINED_EPOCH requested, nothing above it (an empty cache, an
        epoch beyond the latest): (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._entries, requested_epoch, key=_EPOCH)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._entries[0][1]
        return self._entries[higher - 1][0], self._entries[higher][1]

    # -- changes ------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. Ignored (False)
        when the latest entry is ``epoch`` starting at or before it;
        otherwise later entries whose epoch or start offset is not below
        the new one's are removed first (Kafka's non-monotonic truncation)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {epoch} {start_offset}")
        latest = self.latest_entry
        if latest is not None and latest[0] == epoch and latest[1] <= start_offset:
            return False
        self._update(_after_assign(self._entries, epoch, start_offset, self.checkpoint.path))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop the entries starting at or after ``end_offset`` (the log was
        truncated there); returns whether any went."""
        keep = len(self._entries)
        while end_offset >= 0 and keep and self._entries[keep - 1][1] >= end_offset:
            keep -= 1
        if keep == len(self._entries):
            return False
        self._update(self._entries[:keep])
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: entries starting at or
        before it collapse into one, the epoch in force there, starting at
        ``start_offset``. Returns whether anything changed."""
        drop = bisect.bisect_right(self._entries, start_offset, key=_START_OFFSET)
        if drop == 0:
            return False
        entries = [(self._entries[drop - 1][0], start_offset)] + self._entries[drop:]
        if entries == self._entries:
            return False
        self._update(entries)
        return True

    def clear(self) -> None:
        """Drop every entry (the log was emptied)."""
        self._update([])

    def _update(self, entries: list[EpochEntry]) -> None:
        self._unflushed = True
        self._set(entries)

    def flush(self, sync: bool = True, staged: StagedRenames | None = None) -> None:
        """Write the file when it lacks a change: durably, or when ``sync``
        is False not (the caller syncs the filesystem), or staged in
        ``staged`` (renamed once the caller synced the filesystem)."""
        if self._unflushed:
            try:
                self.checkpoint.write(self._entries, durable=sync, staged=staged)
            except OSError as exc:
                raise KafkaStorageError(f"cannot write {self.checkpoint.path}: {exc}") from exc
            self._unflushed = False

    def _set(self, entries: list[EpochEntry]) -> None:
        self._entries = entries
        self.latest_epoch = entries[-1][0] if entries else UNDEFINED_EPOCH

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.checkpoint.path}, {self._entries})"


def _after_assign(entries: list[EpochEntry], epoch: int, start_offset: int,
                  path: Path) -> list[EpochEntry]:
    """``entries`` with (epoch, start_offset) appended after removing the
    trailing entries whose epoch or start offset is not below it."""
    keep = len(entries)
    while keep and (entries[keep - 1][0] >= epoch or entries[keep - 1][1] >= start_offset):
        keep -= 1
    removed = entries[keep:]
    # Replacing one entry that starts at the same offset is the normal case
    # (an epoch assigned before any of its data was written); more is a conflict.
    if len(removed) > 1 or (removed and removed[0][1] != start_offset):
        log.warning("%s: new leader epoch entry %d %d removed conflicting entries %s",
                    path, epoch, start_offset, removed)
    return entries[:keep] + [(epoch, start_offset)]

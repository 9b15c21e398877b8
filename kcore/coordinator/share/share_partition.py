"""One share-partition: a topic partition as one share group consumes it
(KIP-932; Kafka's ``SharePartition``).

Records from the share-partition start offset on are in flight: each
offset has a state and a delivery count.

    AVAILABLE (0)    may be acquired (new, released, or its lock expired)
    ACQUIRED (1)     locked by one member until its lock deadline
    ACKNOWLEDGED (2) accepted: done
    ARCHIVED (4)     rejected, past the delivery count limit, aborted, a gap
                     or a control record: done, never delivered again

Offsets past ``end_offset`` have never been acquired (implicitly
available). Acquiring counts a delivery; an acquired record goes back to
AVAILABLE on RELEASE, on its lock expiring or when its member's session
closes, unless its delivery count has reached the limit, in which case it
is ARCHIVED. The start offset moves past every offset at its head that is
done, so the state kept is the window between the start offset and the
last offset acquired: at most ``max_in_flight`` records
(``group.share.partition.max.record.locks``).

A record is only ever acquired from AVAILABLE, and ACQUIRED names one
member, so no record is held by two members at once; an acknowledgement
of an offset that is not ACQUIRED by that member changes nothing and is
answered INVALID_RECORD_STATE.

The state is one entry per offset; the loops over a batch's offsets are
kept tight (a fetch acquires and acknowledges thousands of records at
once: a producer's batch of 1 MiB holds ~9,000 records of 100 bytes).
``_maybe_available`` is false only when no offset of the window is
AVAILABLE, so that the next fetch offset is the window's end without a
scan of it; ``changes`` counts archivals and start moves, the changes
that an acquisition makes and that are written back.

Pure: no I/O, no clock. Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from kcore.protocol.errors import ErrorCode


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """The acknowledge types of ShareFetch / ShareAcknowledge."""
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


# What each acknowledgement makes of an acquired record (RELEASE depends
# on the delivery count, RENEW keeps it acquired).
_DONE = {AcknowledgeType.GAP: RecordState.ARCHIVED, AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
         AcknowledgeType.REJECT: RecordState.ARCHIVED}


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str = ""
    deadline: float = 0.0  # the lock's end (event-loop time) while ACQUIRED


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted run of offsets in one state with one delivery count."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int, delivery_count_limit: int, max_in_flight: int,
                 state_epoch: int = 0) -> None:
        self.start_offset = start_offset
        # One past the last offset ever acquired (the cached window's end).
        self.end_offset = start_offset
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.state_epoch = state_epoch
        self.records: dict[int, InFlight] = {}
        # Deliveries counted and records archived by the delivery count
        # limit, for /metrics.
        self.deliveries = 0
        self.archived_by_limit = 0
        self.changes = 0
        self._maybe_available = False

    # -- loading -------------------------------------------------------------------------
    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """The state read back from ``__share_group_state``: what was
        acquired when it was written is available again (its locks died
        with the leader that held them)."""
        self.start_offset = self.end_offset = start_offset
        self.records.clear()
        self._maybe_available = True
        for batch in batches:
            state = RecordState(batch.delivery_state)
            if state == RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                self.records[offset] = InFlight(state, batch.delivery_count)
            self.end_offset = max(self.end_offset, batch.last_offset + 1)
        self._advance_start()

    def state_batches(self) -> list[StateBatch]:
        """The window as runs of (state, delivery count), ACQUIRED written
        as AVAILABLE: Kafka's persisted states are 0, 2 and 4."""
        batches: list[StateBatch] = []
        records = self.records
        run: list[int] = []  # first, last, state, delivery count of the open run
        for offset in range(self.start_offset, self.end_offset):
            entry = records.get(offset)
            if entry is None:
                continue
            state = RecordState.AVAILABLE if entry.state == RecordState.ACQUIRED else entry.state
            if run and run[1] == offset - 1 and run[2] == state and run[3] == entry.delivery_count:
                run[1] = offset
                continue
            if run:
                batches.append(StateBatch(*run))
            run = [offset, offset, state, entry.delivery_count]
        if run:
            batches.append(StateBatch(*run))
        return batches

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets / an offset out of the log's range: start
        again at ``start_offset`` with nothing in flight."""
        self.start_offset = self.end_offset = start_offset
        self.records.clear()
        self._maybe_available = False

    # -- queries -------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Records acquired or waiting to be acquired again."""
        return sum(1 for entry in self.records.values()
                   if entry.state in (RecordState.ACQUIRED, RecordState.AVAILABLE))

    @property
    def acquired(self) -> int:
        return sum(1 for entry in self.records.values() if entry.state == RecordState.ACQUIRED)

    @property
    def delivery_complete_count(self) -> int:
        """Offsets at or past the start offset that are done (KIP-1226)."""
        return sum(1 for entry in self.records.values()
                   if entry.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))

    def next_fetch_offset(self) -> int:
        """Where a fetch reads from: the first available offset in the
        window, else the window's end."""
        records = self.records
        if not self._maybe_available and len(records) == self.end_offset - self.start_offset:
            return self.end_offset
        for offset in range(self.start_offset, self.end_offset):
            entry = records.get(offset)
            if entry is None or entry.state == RecordState.AVAILABLE:
                return offset
        self._maybe_available = False
        return self.end_offset

    def has_available(self, upper: int) -> bool:
        """Something acquirable below ``upper`` (the fetchable end of the log)."""
        return self.next_fetch_offset() < upper

    def is_full(self) -> bool:
        return self.end_offset - self.start_offset >= self.max_in_flight

    # -- acquisition ---------------------------------------------------------------------
    def acquire(self, member_id: str, first_offset: int, last_offset: int, deadline: float,
                room: int, whole_batch: bool = False) -> list[AcquiredRange]:
        """Acquire for ``member_id`` up to ``room`` acquirable offsets of
        [first_offset, last_offset] (one fetched batch): available ones in
        the window and new ones past it, as long as the window has room.
        ``whole_batch`` (Kafka's batch-optimized acquire mode) takes every
        acquirable offset of the batch once it starts, past ``room`` and
        the window's limit: the batch goes to the client whole anyway."""
        acquired: list[AcquiredRange] = []
        offset = max(first_offset, self.start_offset)
        if whole_batch and (room <= 0 or self.is_full()):
            return acquired
        records = self.records
        window_last = min(last_offset, self.end_offset - 1)
        while offset <= window_last and (room > 0 or whole_batch):
            entry = records.get(offset)
            if entry is not None and entry.state == RecordState.AVAILABLE:
                entry.state = RecordState.ACQUIRED
                entry.delivery_count += 1
                entry.member_id = member_id
                entry.deadline = deadline
                room -= 1
                _append(acquired, offset, offset, entry.delivery_count)
            offset += 1
        if offset > last_offset or not (room > 0 or whole_batch):
            self.deliveries += sum(r.last_offset - r.first_offset + 1 for r in acquired)
            return acquired
        # Offsets past the window's end: new, each delivered for the first time.
        if whole_batch:
            new_last = last_offset
        elif self.is_full():
            new_last = offset - 1
        else:
            new_last = min(last_offset, offset + room - 1,
                           max(offset, self.start_offset + self.max_in_flight - 1))
        for new in range(offset, new_last + 1):
            records[new] = InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
        if new_last >= offset:
            self.end_offset = new_last + 1
            _append(acquired, offset, new_last, 1)
        self.deliveries += sum(r.last_offset - r.first_offset + 1 for r in acquired)
        return acquired

    def archive(self, first_offset: int, last_offset: int) -> None:
        """Offsets never to be delivered (aborted transactions, control
        records) that lie at or past the next fetch: done at once."""
        for offset in range(max(first_offset, self.start_offset), last_offset + 1):
            entry = self.records.get(offset)
            if entry is None and offset >= self.end_offset:
                if self.is_full():
                    break
                self.records[offset] = InFlight(RecordState.ARCHIVED)
                self.end_offset = offset + 1
            elif entry is not None and entry.state == RecordState.AVAILABLE:
                entry.state = RecordState.ARCHIVED
        self.changes += 1
        self._advance_start()

    # -- acknowledgement -----------------------------------------------------------------
    def check_acknowledgement(self, member_id: str, first_offset: int, last_offset: int,
                              types: list[int]) -> int:
        """INVALID_REQUEST for a malformed batch, INVALID_RECORD_STATE when
        some offset is not ACQUIRED by ``member_id``; NONE otherwise."""
        if first_offset > last_offset or not types or (
                len(types) != 1 and len(types) != last_offset - first_offset + 1):
            return ErrorCode.INVALID_REQUEST
        if any(kind not in AcknowledgeType.__members__.values() for kind in types):
            return ErrorCode.INVALID_REQUEST
        if last_offset - first_offset >= self.max_in_flight + len(self.records):
            return ErrorCode.INVALID_RECORD_STATE
        records = self.records
        acquired = RecordState.ACQUIRED
        for offset in range(first_offset, last_offset + 1):
            entry = records.get(offset)
            if entry is None or entry.state != acquired or entry.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        return ErrorCode.NONE

    def acknowledge(self, member_id: str, batches: list[tuple[int, int, list[int]]],
                    renew_deadline: float) -> int:
        """Apply acknowledgement batches (first, last, types) all or
        nothing: the first error found changes nothing."""
        for first, last, types in batches:
            code = self.check_acknowledgement(member_id, first, last, types)
            if code != ErrorCode.NONE:
                return code
        for first, last, types in batches:
            if len(types) == 1:
                self._apply(first, last, AcknowledgeType(types[0]), renew_deadline)
            else:
                for offset in range(first, last + 1):
                    self._apply(offset, offset, AcknowledgeType(types[offset - first]), renew_deadline)
        self._advance_start()
        return ErrorCode.NONE

    def _apply(self, first: int, last: int, kind: AcknowledgeType, renew_deadline: float) -> None:
        """One acknowledge type over acquired offsets [first, last]."""
        records = self.records
        if kind == AcknowledgeType.RENEW:
            for offset in range(first, last + 1):
                records[offset].deadline = renew_deadline
        elif kind == AcknowledgeType.RELEASE:
            for offset in range(first, last + 1):
                self._release(records[offset])
        else:
            state = _DONE[kind]
            for offset in range(first, last + 1):
                entry = records[offset]
                entry.state = state
                entry.member_id = ""

    # -- releases ------------------------------------------------------------------------
    def release_member(self, member_id: str) -> int:
        """A member's session closed or it left: its records go back."""
        released = 0
        for entry in self.records.values():
            if entry.state == RecordState.ACQUIRED and entry.member_id == member_id:
                self._release(entry)
                released += 1
        self._advance_start()
        return released

    def expire_locks(self, now: float) -> int:
        """Locks past their deadline end: their records go back."""
        expired = 0
        for entry in self.records.values():
            if entry.state == RecordState.ACQUIRED and entry.deadline <= now:
                self._release(entry)
                expired += 1
        if expired:
            self._advance_start()
        return expired

    def next_deadline(self) -> float | None:
        deadlines = [entry.deadline for entry in self.records.values()
                     if entry.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def _release(self, entry: InFlight) -> None:
        entry.member_id = ""
        if entry.delivery_count >= self.delivery_count_limit:
            entry.state = RecordState.ARCHIVED
            self.archived_by_limit += 1
        else:
            entry.state = RecordState.AVAILABLE
            self._maybe_available = True

    def _advance_start(self) -> None:
        """Move the start offset past the done records at the window's head."""
        offset = start = self.start_offset
        records = self.records
        end = self.end_offset
        while offset < end:
            entry = records.get(offset)
            if entry is None or entry.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            offset += 1
        if offset == end and len(records) == end - start:
            records.clear()  # the whole window is done: the common case of a fetch acknowledged whole
        else:
            for done in range(start, offset):
                del records[done]
        self.start_offset = offset

    def move_start_to(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the window."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            self.records.pop(offset, None)
        self.changes += 1
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)


def _append(ranges: list[AcquiredRange], first: int, last: int, delivery_count: int) -> None:
    previous = ranges[-1] if ranges else None
    if previous is not None and previous.last_offset == first - 1 and previous.delivery_count == delivery_count:
        ranges[-1] = AcquiredRange(previous.first_offset, last, delivery_count)
    else:
        ranges.append(AcquiredRange(first, last, delivery_count))

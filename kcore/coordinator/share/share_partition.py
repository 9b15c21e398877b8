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

    # -- loading -------------------------------------------------------------------------
    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """The state read back from ``__share_group_state``: what was
        acquired when it was written is available again (its locks died
        with the leader that held them)."""
        self.start_offset = self.end_offset = start_offset
        self.records.clear()
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
        for offset in range(self.start_offset, self.end_offset):
            entry = self.records.get(offset)
            if entry is None:
                continue
            state = RecordState.AVAILABLE if entry.state == RecordState.ACQUIRED else entry.state
            last = batches[-1] if batches else None
            if (last is not None and last.last_offset == offset - 1 and last.delivery_state == state
                    and last.delivery_count == entry.delivery_count):
                batches[-1] = StateBatch(last.first_offset, offset, state, entry.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, entry.delivery_count))
        return batches

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets / an offset out of the log's range: start
        again at ``start_offset`` with nothing in flight."""
        self.start_offset = self.end_offset = start_offset
        self.records.clear()

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
        for offset in range(self.start_offset, self.end_offset):
            entry = self.records.get(offset)
            if entry is None or entry.state == RecordState.AVAILABLE:
                return offset
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
        while offset <= last_offset and (room > 0 or whole_batch):
            entry = self.records.get(offset)
            if entry is None and offset >= self.end_offset:
                if self.is_full() and not whole_batch:
                    break
                entry = self.records[offset] = InFlight(RecordState.AVAILABLE)
                self.end_offset = offset + 1
            if entry is not None and entry.state == RecordState.AVAILABLE:
                entry.state = RecordState.ACQUIRED
                entry.delivery_count += 1
                entry.member_id = member_id
                entry.deadline = deadline
                self.deliveries += 1
                room -= 1
                _append(acquired, offset, entry.delivery_count)
            offset += 1
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
        for offset in range(first_offset, last_offset + 1):
            entry = self.records.get(offset)
            if entry is None or entry.state != RecordState.ACQUIRED or entry.member_id != member_id:
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
            for offset in range(first, last + 1):
                kind = AcknowledgeType(types[0] if len(types) == 1 else types[offset - first])
                entry = self.records[offset]
                if kind == AcknowledgeType.RENEW:
                    entry.deadline = renew_deadline
                elif kind == AcknowledgeType.RELEASE:
                    self._release(entry)
                else:
                    entry.state = _DONE[kind]
                    entry.member_id = ""
        self._advance_start()
        return ErrorCode.NONE

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

    def _advance_start(self) -> None:
        """Move the start offset past the done records at the window's head."""
        offset = self.start_offset
        records = self.records
        while offset < self.end_offset:
            entry = records.get(offset)
            if entry is None or entry.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del records[offset]
            offset += 1
        self.start_offset = offset

    def move_start_to(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the window."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            self.records.pop(offset, None)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)


def _append(ranges: list[AcquiredRange], offset: int, delivery_count: int) -> None:
    last = ranges[-1] if ranges else None
    if last is not None and last.last_offset == offset - 1 and last.delivery_count == delivery_count:
        ranges[-1] = AcquiredRange(last.first_offset, offset, delivery_count)
    else:
        ranges.append(AcquiredRange(offset, offset, delivery_count))

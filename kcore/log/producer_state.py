"""Idempotent-producer state of one partition, and its snapshot file.

Per producer id the broker keeps the current epoch and the metadata of the
last 5 batches it appended (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
which matches max.in.flight.requests.per.connection <= 5 for idempotence). A
batch that repeats one of them is a retry: it is answered with the original
offsets and not appended again. Otherwise its first sequence must follow the
last one (wrapping from 2**31-1 to 0), or start at 0 under a newer epoch.

Transactions: a producer's first transactional batch opens its
transaction (its offset bounds the last stable offset); a marker (control
batch) closes it, after two checks: the marker's producer epoch may not be
older than the producer's (INVALID_PRODUCER_EPOCH) and its coordinator
epoch not older than the last marker's (TRANSACTION_COORDINATOR_FENCED: a
deposed coordinator). A marker under a newer epoch (a timed-out
transaction aborted by its coordinator) makes that epoch the producer's,
fencing its older batches.

Transaction verification (KIP-890 part 1): a transactional batch is
appended only into a transaction this partition already holds data of for
the producer (``has_ongoing_transaction``), or once the transaction
coordinator said the partition is in the producer's ongoing transaction.
Before asking, the leader takes a verification guard for the producer
(``start_verification``: one unique number); writing a transactional batch
or a marker for the producer drops it, so an answer that comes back after
the transaction ended (a marker written meanwhile) no longer matches and
the batch is refused with INVALID_TXN_STATE (Kafka's ``VerificationGuard``:
no transaction can be reopened by a stale answer). Guards live in memory
only, as Kafka's, and expire with idle producers.

Snapshot `<offset>.snapshot` in the partition directory (big-endian):

    i16 version=2 | u32 crc32c(of everything after it) | i32 count |
    count x (i64 producer_id, i16 epoch, i32 first_seq, i32 last_seq,
             i64 first_offset, i64 last_offset, i64 timestamp,
             i64 current_txn_first_offset, i32 coordinator_epoch)

Version 1 (no coordinator_epoch) is read too.

`offset` is the log end offset the snapshot covers; batches after it are
replayed from the log on load. Only the newest batch per producer goes into
a snapshot (as in Kafka); replay refills the rest.

Not thread-safe: one partition, one event loop.
"""
from __future__ import annotations

import itertools
import os
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from kcore._native.records import crc32c
from kcore.protocol.constants import INT32_MAX
from kcore.protocol.errors import ErrorCode

BATCHES_TO_RETAIN = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
_HEADER = struct.Struct(">hIi")
_ENTRIES = {1: struct.Struct(">qhiiqqqq"), 2: struct.Struct(">qhiiqqqqi")}
# The guard of a produce that was not verified: it matches no producer's.
NO_VERIFICATION_GUARD = 0
# Verification guards, unique across every partition of the process.
_guards = itertools.count(NO_VERIFICATION_GUARD + 1)


class ProducerStateError(Exception):
    """A batch breaks its producer's epoch or sequence; error_code is Kafka's."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


@dataclass
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    last_timestamp: int = 0
    # First offset of the open transaction, -1 when none (read_committed LSO).
    current_txn_first_offset: int = -1
    # Coordinator epoch of the last marker (-1 before any).
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """Sequence of the batch's last record, wrapping past int32 max."""
    return (base_sequence + last_offset_delta) % (INT32_MAX + 1)


class ProducerStateManager:
    """Producer ids -> epochs and recent batches for one partition."""

    def __init__(self, directory: Path, expiration_ms: int = 86_400_000):
        self.directory = directory if isinstance(directory, Path) else Path(directory)
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction: the last
        # stable offset is read on every fetch, so it must not scan every
        # producer this partition has seen (thousands over a day).
        self._open_transactions: dict[int, int] = {}
        # producer id -> (verification guard, when it was taken in ms).
        self._verifications: dict[int, tuple[int, int]] = {}
        self.snapshot_offset = 0

    # -- the produce path ----------------------------------------------------
    def check(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int,
              verification_guard: int | None = None) -> BatchMetadata | None:
        """Validate a batch before append. Returns the original batch when
        this one is a retry of it; raises ProducerStateError when the batch
        is fenced or out of order; None means append it. A transactional
        batch that must be verified names the ``verification_guard`` its
        produce was verified under (NO_VERIFICATION_GUARD: none); after a
        retry, that is checked first (INVALID_TXN_STATE), as in Kafka's
        ``analyzeAndValidateProducerState``."""
        entry = self.producers.get(producer_id)
        last_seq = last_sequence(first_seq, last_offset_delta)
        if entry is not None and epoch == entry.epoch:
            duplicate = entry.find_duplicate(first_seq, last_seq)
            if duplicate is not None:
                return duplicate
        if verification_guard is not None:
            self._check_verified(producer_id, verification_guard)
        if entry is None:
            if first_seq != 0:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {producer_id} is unknown here and its first sequence "
                    f"is {first_seq}, not 0")
            return None
        if epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {epoch} is older than {entry.epoch}")
        if epoch > entry.epoch:
            if first_seq != 0:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {producer_id} new epoch {epoch} must start at sequence 0, "
                    f"got {first_seq}")
            return None
        expected = _next_seq(entry.last_seq)
        if first_seq != expected:
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} sent sequence {first_seq}, expected {expected}")
        return None

    def check_epoch(self, producer_id: int, epoch: int) -> None:
        """A batch without sequence numbers (a coordinator's, such as the
        transactional offsets of TxnOffsetCommit) is still fenced by its
        epoch, as Kafka's ProducerAppendInfo checks every batch's: a late one
        from before a fence must not reopen a transaction the marker closed."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {epoch} is older than {entry.epoch}")

    def update(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int,
               first_offset: int, timestamp: int, is_transactional: bool = False) -> None:
        """Record an appended batch (also used when replaying the log)."""
        if is_transactional:
            self._verifications.pop(producer_id, None)
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = ProducerEntry(producer_id, epoch, coordinator_epoch=coordinator_epoch)
            self.producers[producer_id] = entry
            self._open_transactions.pop(producer_id, None)
        if first_seq >= 0:
            entry.batches.append(BatchMetadata(
                first_seq, last_sequence(first_seq, last_offset_delta),
                first_offset, first_offset + last_offset_delta, timestamp))
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        if is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset
            self._open_transactions[producer_id] = first_offset

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """Raise ProducerStateError when a marker may not be written."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"marker of producer {producer_id} has epoch {epoch}, older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise ProducerStateError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"marker of producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}")

    def complete_transaction(self, producer_id: int, epoch: int, coordinator_epoch: int,
                             timestamp: int) -> int:
        """A marker was appended: close the producer's transaction. Returns
        the first offset of the transaction it closed, -1 when none was open
        (a marker for a partition the transaction never wrote)."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = ProducerEntry(
                producer_id, epoch,
                current_txn_first_offset=entry.current_txn_first_offset if entry else -1,
                coordinator_epoch=entry.coordinator_epoch if entry else -1)
            self.producers[producer_id] = entry
        self._verifications.pop(producer_id, None)
        first_offset = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        self._open_transactions.pop(producer_id, None)
        return first_offset

    # -- transaction verification (KIP-890) -----------------------------------
    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """This partition holds data of the producer's open transaction: its
        next batches need no verification."""
        return producer_id in self._open_transactions

    def start_verification(self, producer_id: int, now_ms: int | None = None) -> int:
        """The producer's verification guard, taken now unless one is held."""
        held = self._verifications.get(producer_id)
        if held is not None:
            return held[0]
        guard = next(_guards)
        self._verifications[producer_id] = (
            guard, int(time.time() * 1000) if now_ms is None else now_ms)
        return guard

    def _check_verified(self, producer_id: int, verification_guard: int) -> None:
        if producer_id in self._open_transactions:
            return
        held = self._verifications.get(producer_id)
        if held is None or held[0] != verification_guard:
            raise ProducerStateError(
                ErrorCode.INVALID_TXN_STATE,
                f"transactional batch of producer {producer_id} is not part of an ongoing "
                f"transaction here (verification guard {verification_guard}, held "
                f"{held[0] if held else None})")

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, None when none is."""
        return min(self._open_transactions.values()) if self._open_transactions else None

    def remove_expired(self, now_ms: int | None = None) -> int:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        expired = [pid for pid, entry in self.producers.items()
                   if entry.current_txn_first_offset < 0
                   and now_ms - entry.last_timestamp > self.expiration_ms]
        for pid in expired:
            del self.producers[pid]
        for pid, (_, taken_ms) in list(self._verifications.items()):
            if now_ms - taken_ms >= self.expiration_ms:
                del self._verifications[pid]
        return len(expired)

    def truncate(self) -> None:
        """Forget everything (log truncated below what the state covers)."""
        self.producers.clear()
        self._open_transactions.clear()
        self._verifications.clear()
        self.snapshot_offset = 0

    # -- snapshots ------------------------------------------------------------
    def write_snapshot(self, offset: int, durable: bool = True) -> Path:
        """Write ``<offset>.snapshot`` (fsynced when ``durable``; a clean
        shutdown syncs the filesystem once instead) and drop older ones."""
        body = bytearray(struct.pack(">i", len(self.producers)))
        for entry in self.producers.values():
            last = entry.batches[-1] if entry.batches else BatchMetadata(-1, -1, -1, -1, -1)
            body += _ENTRIES[SNAPSHOT_VERSION].pack(
                entry.producer_id, entry.epoch, last.first_seq, last.last_seq, last.first_offset,
                last.last_offset, entry.last_timestamp, entry.current_txn_first_offset,
                entry.coordinator_epoch)
        crc = crc32c(bytes(body))
        path = self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"
        tmp = path.with_suffix(".snapshot.tmp")
        with open(tmp, "wb") as handle:
            handle.write(struct.pack(">hI", SNAPSHOT_VERSION, crc) + body)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
        for old in self._snapshot_files():
            if old != path:
                old.unlink(missing_ok=True)
        self.snapshot_offset = offset
        return path

    def load_snapshot(self, log_end_offset: int, offsets: list[int] | None = None) -> int:
        """Load the newest valid snapshot at or below log_end_offset and
        return its offset (0 when none): the caller replays from there.
        ``offsets``: the snapshots in the directory, when the caller has
        just listed it (else it is listed here)."""
        self.producers.clear()
        self._open_transactions.clear()
        paths = self._snapshot_files() if offsets is None else [
            self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}" for offset in offsets]
        for path in sorted(paths, reverse=True):
            offset = int(path.name[:20])
            if offset > log_end_offset:
                path.unlink(missing_ok=True)  # covers data that was truncated away
                continue
            if self._read_snapshot(path):
                self.snapshot_offset = offset
                return offset
            path.unlink(missing_ok=True)  # corrupt: replay from further back
        self.snapshot_offset = 0
        return 0

    def _read_snapshot(self, path: Path) -> bool:
        data = path.read_bytes()
        if len(data) < _HEADER.size:
            return False
        version, crc, count = _HEADER.unpack_from(data)
        body = data[6:]
        layout = _ENTRIES.get(version)
        if layout is None or crc32c(body) != crc or len(body) != 4 + count * layout.size:
            return False
        for i in range(count):
            (pid, epoch, first_seq, last_seq, first_offset, last_offset, timestamp,
             txn_first, *rest) = layout.unpack_from(body, 4 + i * layout.size)
            entry = ProducerEntry(pid, epoch, last_timestamp=timestamp,
                                  current_txn_first_offset=txn_first,
                                  coordinator_epoch=rest[0] if rest else -1)
            if first_seq >= 0:
                entry.batches.append(BatchMetadata(first_seq, last_seq, first_offset,
                                                   last_offset, timestamp))
            self.producers[pid] = entry
            if txn_first >= 0:
                self._open_transactions[pid] = txn_first
        return True

    def _snapshot_files(self) -> list[Path]:
        return [p for p in self.directory.glob(f"*{SNAPSHOT_SUFFIX}")
                if len(p.name) == 20 + len(SNAPSHOT_SUFFIX) and p.name[:20].isdigit()]

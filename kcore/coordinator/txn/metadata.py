"""One transactional id's state, and the transitions it may take.

A change is two steps, as in Kafka's TransactionMetadata: ``prepare_*``
checks it against the state table (state.py), marks the state *pending*
and returns the new values as a ``TxnTransit``; the coordinator appends
that transit to ``__transaction_state`` and, once the ISR has it, calls
``complete_transition`` (or ``abort_transition`` when the append failed).
While a transition is pending, every request on the id is answered
CONCURRENT_TRANSACTIONS, so no two changes ever interleave.

Epochs follow Kafka's transaction version 0 (no bump at EndTxn): an
InitProducerId bumps the epoch (fencing the previous holder of the id);
a transaction open at that moment, or past its timeout, is aborted under
a fencing bump (PrepareEpochFence). At epoch 32766 the next
InitProducerId takes a new producer id instead.

Times: ``start_ms`` and ``last_update_ms`` are the wall clock, written to
the log as Kafka writes txnStartTimestamp and txnLastUpdateTimestamp.
The timeout runs from ``start_monotonic_ms`` instead, this broker's
monotonic clock at the start (kcore/clock.py), never written: a step of
the wall clock aborts nothing. A coordinator that loads an open
transaction from the log sets it from the wall-clock start once
(``anchor_start``): the time since then on another broker is known only
through the timestamp written there.

Not thread-safe: the coordinator's event loop owns every instance.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kcore.coordinator.txn.records import TransactionValue
from kcore.coordinator.txn.state import IllegalStateError, TransactionState
from kcore.metadata import TopicPartition
from kcore.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

# Kafka's TransactionMetadata.isEpochExhausted: the last epoch is kept for
# fencing (Short.MaxValue - 1), so a producer id lasts 32766 bumps.
MAX_EPOCH = 32767 - 1
# Short.MaxValue: a fence may bump up to it (never handed to a producer),
# not past it.
LAST_FENCE_EPOCH = 32767



def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH


@dataclass(frozen=True)
class TxnTransit:
    """The values a prepared transition writes (Kafka's TxnTransitMetadata)."""
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int
    start_monotonic_ms: int = -1  # not written (module doc)

    def to_value(self) -> TransactionValue:
        return TransactionValue(self.producer_id, self.producer_epoch, self.timeout_ms,
                                self.state.state_id, self.partitions, self.last_update_ms,
                                self.start_ms)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TransactionState = TransactionState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = 0
    start_monotonic_ms: int = -1
    pending_state: TransactionState | None = None
    # A fencing bump whose write failed: the next fence reuses its epoch
    # rather than burning another (Kafka's hasFailedEpochFence).
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_value(cls, transactional_id: str, value: TransactionValue) -> TransactionMetadata:
        state = TransactionState.from_id(value.state_id)
        return cls(transactional_id, value.producer_id, value.producer_epoch,
                   timeout_ms=value.timeout_ms, state=state, partitions=set(value.partitions),
                   start_ms=value.start_ms, last_update_ms=value.last_update_ms)

    @property
    def pending(self) -> bool:
        return self.pending_state is not None

    @property
    def in_transaction(self) -> bool:
        return self.state in (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
                              TransactionState.PREPARE_ABORT)

    def current(self) -> TxnTransit:
        return TxnTransit(self.producer_id, self.last_producer_id, self.producer_epoch,
                          self.last_producer_epoch, self.timeout_ms, self.state,
                          frozenset(self.partitions), self.start_ms, self.last_update_ms,
                          self.start_monotonic_ms)

    def anchor_start(self, now_ms: int, monotonic_now_ms: int) -> None:
        """A transaction read from the log: its monotonic start is now less
        the wall-clock time since its written start (none when that start
        lies ahead of this broker's clock, or was not written)."""
        since_start_ms = now_ms - self.start_ms if self.start_ms >= 0 else 0
        self.start_monotonic_ms = monotonic_now_ms - max(since_start_ms, 0)

    def timed_out(self, monotonic_now_ms: int) -> bool:
        """Ongoing for longer than its timeout, by the monotonic clock."""
        return (self.state is TransactionState.ONGOING
                and self.start_monotonic_ms + self.timeout_ms < monotonic_now_ms)

    # -- prepare -------------------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch to fence the current producer before aborting its
        transaction; the new epoch is never handed to a client."""
        if self.producer_epoch >= LAST_FENCE_EPOCH:
            raise IllegalStateError(f"{self.transactional_id}: cannot fence epoch {self.producer_epoch}")
        epoch = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TransactionState.PREPARE_EPOCH_FENCE, producer_epoch=epoch,
                             last_producer_epoch=NO_PRODUCER_EPOCH)

    def prepare_increment_producer_epoch(self, timeout_ms: int, now_ms: int,
                                         expected_epoch: int | None = None) -> TxnTransit | None:
        """InitProducerId on a finished transaction: the next epoch, or, for
        a retry whose answer was lost, the epoch already given (None: the
        expected epoch is neither, the caller is fenced)."""
        if expected_epoch is None or self.producer_epoch == NO_PRODUCER_EPOCH \
                or expected_epoch == self.producer_epoch:
            epoch, last = self.producer_epoch + 1, (
                NO_PRODUCER_EPOCH if expected_epoch is None else self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._prepare(TransactionState.EMPTY, producer_epoch=epoch, last_producer_epoch=last,
                             timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1,
                             start_monotonic_ms=-1, last_update_ms=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        return self._prepare(TransactionState.EMPTY, producer_id=new_producer_id,
                             last_producer_id=self.producer_id, producer_epoch=0,
                             last_producer_epoch=(self.producer_epoch if record_last_epoch
                                                  else NO_PRODUCER_EPOCH),
                             timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1,
                             start_monotonic_ms=-1, last_update_ms=now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int,
                               monotonic_now_ms: int) -> TxnTransit:
        """``now_ms``: the wall clock, written; ``monotonic_now_ms``: the
        monotonic clock, which the timeout runs on (module doc)."""
        fresh = self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                               TransactionState.COMPLETE_ABORT)
        if not fresh:
            return self._prepare(TransactionState.ONGOING,
                                 partitions=frozenset(self.partitions | added), last_update_ms=now_ms)
        return self._prepare(TransactionState.ONGOING, partitions=frozenset(self.partitions | added),
                             start_ms=now_ms, start_monotonic_ms=monotonic_now_ms,
                             last_update_ms=now_ms)

    def prepare_abort_or_commit(self, state: TransactionState, now_ms: int) -> TxnTransit:
        return self._prepare(state, last_update_ms=now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = (TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT
                 else TransactionState.COMPLETE_ABORT)
        self.has_failed_epoch_fence = False
        return self._prepare(state, partitions=frozenset(), last_update_ms=now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(TransactionState.DEAD, partitions=frozenset())

    def _prepare(self, state: TransactionState, **changes) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalStateError(
                f"{self.transactional_id}: transition to {state.kafka_name} while "
                f"{self.pending_state.kafka_name} is pending")
        if not state.can_follow(self.state):
            raise IllegalStateError(
                f"{self.transactional_id}: {state.kafka_name} cannot follow {self.state.kafka_name}")
        transit = replace(self.current(), state=state, **changes)
        if transit.producer_id < 0 or (state is not TransactionState.DEAD
                                       and transit.producer_epoch < 0):
            raise IllegalStateError(f"{self.transactional_id}: producer id/epoch "
                                    f"{transit.producer_id}/{transit.producer_epoch}")
        self.pending_state = state
        return transit

    # -- complete ------------------------------------------------------------------------
    def complete_transition(self, transit: TxnTransit) -> None:
        """The transit is in the log (and on the ISR): make it current."""
        if self.pending_state is not transit.state:
            raise IllegalStateError(
                f"{self.transactional_id}: completing {transit.state.kafka_name} but "
                f"{self.pending_state.kafka_name if self.pending_state else 'nothing'} is pending")
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.start_monotonic_ms = transit.start_monotonic_ms
        self.pending_state = None

    def abort_transition(self) -> None:
        """The append failed: the state stays what it was."""
        self.pending_state = None

    def remove_partition(self, partition: TopicPartition) -> None:
        """A marker reached ``partition``'s leader (Prepare* states only)."""
        if self.state not in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            raise IllegalStateError(f"{self.transactional_id}: removing a partition in "
                                    f"{self.state.kafka_name}")
        self.partitions.discard(partition)

"""A transactional id's state machine (kcore/coordinator/txn/state.py and
metadata.py): every transition against Kafka's table, the two-step
prepare/complete with its pending state, epoch bumps, fencing and the
producer-id rotation when the epochs run out."""
from __future__ import annotations

import itertools

import pytest

from kcore.coordinator.txn.metadata import (
    MAX_EPOCH,
    TransactionMetadata,
    is_epoch_exhausted,
)
from kcore.coordinator.txn.state import IllegalStateError, TransactionState
from kcore.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

S = TransactionState
# Kafka's TransactionState.validPreviousStates (kafka.coordinator.transaction):
# target -> the states it may follow.
KAFKA_TABLE = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
# The ids __transaction_state stores and the names Kafka's tools print.
KAFKA_IDS = {S.EMPTY: (0, "Empty"), S.ONGOING: (1, "Ongoing"), S.PREPARE_COMMIT: (2, "PrepareCommit"),
             S.PREPARE_ABORT: (3, "PrepareAbort"), S.COMPLETE_COMMIT: (4, "CompleteCommit"),
             S.COMPLETE_ABORT: (5, "CompleteAbort"), S.DEAD: (6, "Dead"),
             S.PREPARE_EPOCH_FENCE: (7, "PrepareEpochFence")}
ALL_PAIRS = list(itertools.product(TransactionState, TransactionState))
VALID = [(source, target) for source, target in ALL_PAIRS if source in KAFKA_TABLE[target]]
INVALID = [(source, target) for source, target in ALL_PAIRS if source not in KAFKA_TABLE[target]]
NOW = 1_700_000_000_000
# The monotonic clock: an origin of its own, unrelated to the wall clock.
MONOTONIC_NOW = 5_000_000


def _ids(pairs):
    return [f"{source.kafka_name}->{target.kafka_name}" for source, target in pairs]


def metadata(state: TransactionState = S.EMPTY, epoch: int = 3, partitions=(), **fields) -> TransactionMetadata:
    fields = {"start_ms": NOW - 10, "last_update_ms": NOW - 10, **fields}
    return TransactionMetadata("txn", 1000, epoch, state=state, partitions=set(partitions),
                               timeout_ms=60_000, **fields)


def test_each_state_carries_kafkas_valid_previous_states():
    for state in TransactionState:
        assert state.valid_previous_states == frozenset(KAFKA_TABLE[state])


def test_state_ids_and_names_are_kafkas():
    for state, (state_id, name) in KAFKA_IDS.items():
        assert (state.state_id, state.kafka_name) == (state_id, name)
        assert TransactionState.from_id(state_id) is state
    with pytest.raises(ValueError):
        TransactionState.from_id(8)


def test_table_has_16_valid_transitions():
    assert (len(VALID), len(INVALID)) == (16, 48)


@pytest.mark.parametrize("source,target", VALID, ids=_ids(VALID))
def test_valid_transition_is_pending_until_completed(source, target):
    txn = metadata(source)
    transit = txn._prepare(target)
    assert txn.pending_state is target and txn.state is source
    txn.complete_transition(transit)
    assert txn.state is target and txn.pending_state is None


@pytest.mark.parametrize("source,target", INVALID, ids=_ids(INVALID))
def test_invalid_transition_raises_and_changes_nothing(source, target):
    txn = metadata(source)
    before = txn.current()
    with pytest.raises(IllegalStateError):
        txn._prepare(target)
    assert txn.current() == before and txn.pending_state is None


def test_a_second_prepare_while_one_is_pending_is_refused():
    txn = metadata(S.EMPTY)
    transit = txn.prepare_add_partitions({("t", 0)}, NOW, MONOTONIC_NOW)
    with pytest.raises(IllegalStateError):
        txn.prepare_add_partitions({("t", 1)}, NOW, MONOTONIC_NOW)
    with pytest.raises(IllegalStateError):
        txn.complete_transition(txn.current())  # not the pending one
    txn.complete_transition(transit)
    assert txn.partitions == {("t", 0)}


def test_abort_transition_keeps_the_old_state():
    txn = metadata(S.ONGOING, partitions=[("t", 0)])
    before = txn.current()
    txn.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    txn.abort_transition()
    assert txn.current() == before and not txn.pending


def test_add_partitions_starts_a_transaction_and_then_extends_it():
    txn = metadata(S.COMPLETE_COMMIT)
    first = txn.prepare_add_partitions({("a", 0)}, NOW, MONOTONIC_NOW)
    assert (first.state, first.start_ms, first.partitions) == (S.ONGOING, NOW, frozenset({("a", 0)}))
    assert first.start_monotonic_ms == MONOTONIC_NOW
    txn.complete_transition(first)
    second = txn.prepare_add_partitions({("b", 1)}, NOW + 50, MONOTONIC_NOW + 50)
    # The start of the transaction stays its first AddPartitions' time.
    assert (second.start_ms, second.last_update_ms) == (NOW, NOW + 50)
    assert second.start_monotonic_ms == MONOTONIC_NOW
    assert second.partitions == frozenset({("a", 0), ("b", 1)})


def test_the_timeout_runs_on_the_monotonic_clock_from_the_start():
    txn = metadata(S.EMPTY)
    txn.complete_transition(txn.prepare_add_partitions({("t", 0)}, NOW, MONOTONIC_NOW))
    assert not txn.timed_out(MONOTONIC_NOW + txn.timeout_ms)
    assert txn.timed_out(MONOTONIC_NOW + txn.timeout_ms + 1)
    txn.complete_transition(txn.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW))
    assert not txn.timed_out(MONOTONIC_NOW + txn.timeout_ms + 1)  # only Ongoing ones time out


@pytest.mark.parametrize("start_ms, elapsed_ms", [(NOW - 20_000, 20_000), (NOW + 5_000, 0), (-1, 0)],
                         ids=["written-20s-ago", "written-ahead", "not-written"])
def test_a_transaction_read_from_the_log_is_anchored_at_its_written_start(start_ms, elapsed_ms):
    """The time since the written (wall-clock) start counts once, at load;
    a start ahead of this broker's wall clock, or none, counts as now."""
    txn = metadata(S.ONGOING, start_ms=start_ms)
    txn.anchor_start(NOW, MONOTONIC_NOW)
    assert txn.start_monotonic_ms == MONOTONIC_NOW - elapsed_ms


def test_complete_clears_the_partitions_and_keeps_the_epoch():
    txn = metadata(S.PREPARE_ABORT, epoch=7, partitions=[("t", 0)])
    transit = txn.prepare_complete(NOW)
    assert (transit.state, transit.partitions, transit.producer_epoch) == (S.COMPLETE_ABORT, frozenset(), 7)


# -- InitProducerId epochs -----------------------------------------------------------------------
def test_init_without_an_expected_epoch_bumps_and_forgets_the_last():
    txn = metadata(S.COMPLETE_COMMIT, epoch=3)
    transit = txn.prepare_increment_producer_epoch(30_000, NOW)
    assert (transit.state, transit.producer_epoch, transit.last_producer_epoch) == (S.EMPTY, 4, NO_PRODUCER_EPOCH)
    assert (transit.timeout_ms, transit.start_ms, transit.partitions) == (30_000, -1, frozenset())


def test_first_init_of_a_new_id_gives_epoch_0():
    txn = TransactionMetadata("fresh", 42)
    assert txn.prepare_increment_producer_epoch(30_000, NOW).producer_epoch == 0


def test_init_with_the_current_epoch_bumps_and_remembers_it():
    txn = metadata(S.EMPTY, epoch=3)
    transit = txn.prepare_increment_producer_epoch(30_000, NOW, expected_epoch=3)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (4, 3)


def test_init_retried_with_the_last_epoch_gets_the_same_epoch_again():
    txn = metadata(S.EMPTY, epoch=4, last_producer_epoch=3)
    transit = txn.prepare_increment_producer_epoch(30_000, NOW, expected_epoch=3)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (4, 3)


def test_init_with_any_other_epoch_is_fenced():
    txn = metadata(S.EMPTY, epoch=4, last_producer_epoch=3)
    assert txn.prepare_increment_producer_epoch(30_000, NOW, expected_epoch=2) is None
    assert txn.prepare_increment_producer_epoch(30_000, NOW, expected_epoch=5) is None
    assert not txn.pending


def test_fence_bumps_the_epoch_once_even_when_its_write_failed():
    txn = metadata(S.ONGOING, epoch=5, partitions=[("t", 0)])
    assert txn.prepare_fence_producer_epoch().producer_epoch == 6
    txn.abort_transition()
    txn.has_failed_epoch_fence = True  # what the coordinator records when the write fails
    transit = txn.prepare_fence_producer_epoch()
    assert (transit.state, transit.producer_epoch, transit.last_producer_epoch) == (
        S.PREPARE_EPOCH_FENCE, 5, NO_PRODUCER_EPOCH)
    txn.abort_transition()
    txn.state = S.PREPARE_ABORT
    txn.prepare_complete(NOW)
    assert txn.has_failed_epoch_fence is False


@pytest.mark.parametrize(("epoch", "exhausted"), [(0, False), (MAX_EPOCH - 1, False), (MAX_EPOCH, True),
                                                  (32767, True)])
def test_epoch_exhaustion_is_at_short_max_minus_one(epoch, exhausted):
    assert MAX_EPOCH == 32766
    assert is_epoch_exhausted(epoch) is exhausted


@pytest.mark.parametrize("record_last_epoch", [True, False])
def test_producer_id_rotation_starts_a_new_id_at_epoch_0(record_last_epoch):
    txn = metadata(S.COMPLETE_ABORT, epoch=MAX_EPOCH)
    transit = txn.prepare_producer_id_rotation(2000, 45_000, NOW, record_last_epoch)
    assert (transit.producer_id, transit.last_producer_id, transit.producer_epoch) == (2000, 1000, 0)
    assert transit.last_producer_epoch == (MAX_EPOCH if record_last_epoch else NO_PRODUCER_EPOCH)
    assert (transit.state, transit.timeout_ms) == (S.EMPTY, 45_000)
    txn.complete_transition(transit)
    assert (txn.producer_id, txn.last_producer_id, txn.producer_epoch) == (2000, 1000, 0)


def test_dead_clears_partitions_and_may_not_follow_an_open_transaction():
    assert metadata(S.COMPLETE_COMMIT).prepare_dead().state is S.DEAD
    with pytest.raises(IllegalStateError):
        metadata(S.ONGOING).prepare_dead()


def test_no_transit_without_a_producer_id_or_epoch():
    txn = TransactionMetadata("broken", NO_PRODUCER_ID)
    with pytest.raises(IllegalStateError):
        txn.prepare_add_partitions({("t", 0)}, NOW, MONOTONIC_NOW)


def test_remove_partition_only_while_preparing():
    txn = metadata(S.PREPARE_COMMIT, partitions=[("t", 0), ("t", 1)])
    txn.remove_partition(("t", 0))
    assert txn.partitions == {("t", 1)}
    with pytest.raises(IllegalStateError):
        metadata(S.ONGOING, partitions=[("t", 0)]).remove_partition(("t", 0))


def test_in_transaction_states():
    assert {s for s in TransactionState if metadata(s).in_transaction} == {
        S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT}


def test_fence_goes_up_to_short_max_and_no_further():
    txn = metadata(S.ONGOING, epoch=MAX_EPOCH)
    assert txn.prepare_fence_producer_epoch().producer_epoch == 32767
    txn.abort_transition()
    with pytest.raises(IllegalStateError):
        metadata(S.ONGOING, epoch=32767).prepare_fence_producer_epoch()

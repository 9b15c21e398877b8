import pytest

from kcore.log.producer_state import (
    BATCHES_TO_RETAIN,
    NO_VERIFICATION_GUARD,
    ProducerStateError,
    ProducerStateManager,
)
from kcore.protocol.constants import INT32_MAX


def appended(state, pid, epoch, seq, count, offset):
    assert state.check(pid, epoch, seq, count - 1) is None
    state.update(pid, epoch, seq, count - 1, offset, 1000)


def test_in_order_batches_are_accepted_and_retries_return_original(tmp_path):
    state = ProducerStateManager(tmp_path)
    appended(state, 7, 0, 0, 10, 100)
    appended(state, 7, 0, 10, 5, 110)
    duplicate = state.check(7, 0, 0, 9)
    assert duplicate is not None and duplicate.first_offset == 100


def test_gap_and_old_epoch_are_rejected(tmp_path):
    state = ProducerStateManager(tmp_path)
    appended(state, 7, 1, 0, 10, 0)
    with pytest.raises(ProducerStateError) as gap:
        state.check(7, 1, 11, 0)
    with pytest.raises(ProducerStateError) as fenced:
        state.check(7, 0, 10, 0)
    with pytest.raises(ProducerStateError) as unknown:
        state.check(8, 0, 5, 0)
    assert (gap.value.error_code, fenced.value.error_code, unknown.value.error_code) == (45, 47, 45)


def test_new_epoch_restarts_at_zero(tmp_path):
    state = ProducerStateManager(tmp_path)
    appended(state, 7, 0, 0, 3, 0)
    assert state.check(7, 1, 0, 0) is None
    with pytest.raises(ProducerStateError):
        state.check(7, 1, 3, 0)


def test_only_last_five_batches_are_deduplicated(tmp_path):
    state = ProducerStateManager(tmp_path)
    for i in range(BATCHES_TO_RETAIN + 1):
        appended(state, 1, 0, i, 1, i)
    assert state.check(1, 0, 1, 0) is not None
    with pytest.raises(ProducerStateError):
        state.check(1, 0, 0, 0)  # evicted: now an out-of-order sequence


def test_sequence_wraps_at_int32_max(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(3, 0, INT32_MAX - 1, 0, 0, 0)
    assert state.check(3, 0, INT32_MAX, 0) is None
    state.update(3, 0, INT32_MAX, 1, 1, 0)  # two records: INT32_MAX and 0
    assert state.check(3, 0, 1, 0) is None


def test_snapshot_round_trip_and_corrupt_snapshot_is_ignored(tmp_path):
    state = ProducerStateManager(tmp_path)
    appended(state, 9, 2, 0, 4, 50)
    path = state.write_snapshot(54)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_snapshot(100) == 54
    assert loaded.check(9, 2, 4, 0) is None
    assert loaded.check(9, 2, 0, 3).first_offset == 50
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert ProducerStateManager(tmp_path).load_snapshot(100) == 0


def test_snapshot_beyond_log_end_is_discarded(tmp_path):
    state = ProducerStateManager(tmp_path)
    appended(state, 9, 0, 0, 1, 0)
    state.write_snapshot(10)
    assert ProducerStateManager(tmp_path).load_snapshot(5) == 0
    assert not list(tmp_path.glob("*.snapshot"))


def test_first_unstable_offset_tracks_open_transactions(tmp_path):
    state = ProducerStateManager(tmp_path)
    assert state.first_unstable_offset() is None
    state.update(1, 0, 0, 0, 10, 0, is_transactional=True)
    state.update(2, 0, 0, 0, 12, 0, is_transactional=True)
    state.update(1, 0, 1, 0, 14, 0, is_transactional=True)  # same transaction: still from 10
    state.update(3, 0, 0, 0, 15, 0)  # idempotent only: never unstable
    assert state.first_unstable_offset() == 10
    state.complete_transaction(1, 0, 0, 0)
    assert state.first_unstable_offset() == 12
    state.write_snapshot(20)
    reloaded = ProducerStateManager(tmp_path)
    reloaded.load_snapshot(20)
    assert reloaded.first_unstable_offset() == 12
    reloaded.update(2, 1, 0, 0, 21, 0)  # a new epoch ends the old transaction
    assert reloaded.first_unstable_offset() is None


# -- transaction verification (KIP-890) --------------------------------------------------------
def check_transactional(state, pid, epoch, seq, guard):
    return state.check(pid, epoch, seq, 0, verification_guard=guard)


def test_a_transactional_batch_needs_the_guard_its_verification_was_started_with(tmp_path):
    state = ProducerStateManager(tmp_path)
    with pytest.raises(ProducerStateError) as unverified:
        check_transactional(state, 7, 0, 0, NO_VERIFICATION_GUARD)
    assert unverified.value.error_code == 48  # INVALID_TXN_STATE
    guard = state.start_verification(7)
    assert guard != NO_VERIFICATION_GUARD and state.start_verification(7) == guard  # held until used
    with pytest.raises(ProducerStateError):
        check_transactional(state, 7, 0, 0, guard + 1)
    assert check_transactional(state, 7, 0, 0, guard) is None
    state.update(7, 0, 0, 0, 100, 1000, is_transactional=True)
    # The transaction is open here now: no guard needed, and the old one is gone.
    assert state.has_ongoing_transaction(7)
    assert check_transactional(state, 7, 0, 1, NO_VERIFICATION_GUARD) is None
    assert state.start_verification(7) != guard


def test_a_marker_drops_the_guard_so_a_stale_verification_cannot_reopen_the_transaction(tmp_path):
    """Kafka's ABA case: verified, then the transaction is aborted (a
    marker) before the append: the append is refused."""
    state = ProducerStateManager(tmp_path)
    guard = state.start_verification(7)
    state.complete_transaction(7, 0, 0, 1000)
    with pytest.raises(ProducerStateError) as stale:
        check_transactional(state, 7, 0, 0, guard)
    assert stale.value.error_code == 48
    state.update(7, 0, 0, 0, 100, 1000, is_transactional=True)
    state.complete_transaction(7, 0, 0, 1001)
    assert not state.has_ongoing_transaction(7)
    with pytest.raises(ProducerStateError):
        check_transactional(state, 7, 0, 1, NO_VERIFICATION_GUARD)


def test_a_retry_of_an_appended_batch_is_a_duplicate_before_any_verification(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.start_verification(7)
    state.update(7, 0, 0, 0, 100, 1000, is_transactional=True)
    state.complete_transaction(7, 0, 0, 1001)
    duplicate = check_transactional(state, 7, 0, 0, NO_VERIFICATION_GUARD)
    assert duplicate is not None and duplicate.first_offset == 100


def test_guards_expire_with_idle_producers_and_are_not_snapshotted(tmp_path):
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    guard = state.start_verification(7, now_ms=5000)
    state.remove_expired(now_ms=5999)
    assert state.start_verification(7) == guard
    state.remove_expired(now_ms=6000)
    assert state.start_verification(7) != guard
    state.write_snapshot(0)
    loaded = ProducerStateManager(tmp_path)
    loaded.load_snapshot(0)
    with pytest.raises(ProducerStateError):
        check_transactional(loaded, 7, 0, 0, guard)

"""The share-partition state machine (KIP-932): acquisition, the four
acknowledge types, releases, lock expiry, the delivery count limit and the
start offset, checked against a per-offset oracle of Kafka's rules."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kcore.coordinator.share.share_partition import (
    AcknowledgeType,
    AcquiredRange,
    RecordState,
    SharePartition,
    StateBatch,
)
from kcore.protocol.errors import ErrorCode

ACCEPT, RELEASE, REJECT, GAP, RENEW = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                       AcknowledgeType.REJECT, AcknowledgeType.GAP, AcknowledgeType.RENEW)


def _share(limit: int = 3, max_in_flight: int = 100) -> SharePartition:
    return SharePartition(0, limit, max_in_flight)


def test_acquire_hands_out_new_offsets_once_and_counts_a_delivery():
    share = _share()
    assert share.acquire("a", 0, 9, 10.0, 5) == [AcquiredRange(0, 4, 1)]
    assert share.acquire("b", 0, 9, 10.0, 100) == [AcquiredRange(5, 9, 1)]
    assert share.acquire("c", 0, 9, 10.0, 100) == []
    assert share.end_offset == 10 and share.acquired == 10


def test_accept_and_reject_are_done_and_move_the_start_offset():
    share = _share()
    share.acquire("a", 0, 4, 10.0, 100)
    assert share.acknowledge("a", [(0, 1, [ACCEPT]), (2, 2, [REJECT]), (3, 3, [GAP])], 20.0) == 0
    assert share.start_offset == 4
    assert share.records[4].state == RecordState.ACQUIRED


def test_release_makes_a_record_available_again_with_its_delivery_count():
    share = _share()
    share.acquire("a", 0, 0, 10.0, 100)
    assert share.acknowledge("a", [(0, 0, [RELEASE])], 20.0) == 0
    assert share.acquire("b", 0, 0, 10.0, 100) == [AcquiredRange(0, 0, 2)]


def test_the_delivery_count_limit_archives_instead_of_redelivering():
    share = _share(limit=2)
    share.acquire("a", 0, 0, 10.0, 100)
    share.acknowledge("a", [(0, 0, [RELEASE])], 20.0)
    share.acquire("a", 0, 0, 10.0, 100)
    share.acknowledge("a", [(0, 0, [RELEASE])], 20.0)
    assert share.start_offset == 1 and share.archived_by_limit == 1
    assert share.acquire("a", 0, 0, 10.0, 100) == []


def test_expired_locks_release_and_renew_extends_a_lock():
    share = _share()
    share.acquire("a", 0, 1, 10.0, 100)
    assert share.acknowledge("a", [(1, 1, [RENEW])], 30.0) == 0
    assert share.expire_locks(15.0) == 1
    assert share.records[0].state == RecordState.AVAILABLE
    assert share.records[1].state == RecordState.ACQUIRED
    assert share.next_deadline() == 30.0


def test_a_bad_acknowledgement_changes_nothing():
    share = _share()
    share.acquire("a", 0, 4, 10.0, 100)
    before = {offset: (e.state, e.delivery_count, e.member_id) for offset, e in share.records.items()}
    assert share.acknowledge("a", [(0, 1, [ACCEPT]), (3, 6, [ACCEPT])], 20.0) == ErrorCode.INVALID_RECORD_STATE
    assert share.acknowledge("b", [(0, 1, [ACCEPT])], 20.0) == ErrorCode.INVALID_RECORD_STATE
    assert share.acknowledge("a", [(2, 1, [ACCEPT])], 20.0) == ErrorCode.INVALID_REQUEST
    assert share.acknowledge("a", [(0, 2, [ACCEPT, ACCEPT])], 20.0) == ErrorCode.INVALID_REQUEST
    assert share.acknowledge("a", [(0, 0, [9])], 20.0) == ErrorCode.INVALID_REQUEST
    after = {offset: (e.state, e.delivery_count, e.member_id) for offset, e in share.records.items()}
    assert after == before and share.start_offset == 0


def test_the_window_stops_at_max_in_flight_records():
    share = _share(max_in_flight=3)
    assert share.acquire("a", 0, 9, 10.0, 100) == [AcquiredRange(0, 2, 1)]
    share.acknowledge("a", [(0, 0, [ACCEPT])], 20.0)
    assert share.acquire("a", 0, 9, 10.0, 100) == [AcquiredRange(3, 3, 1)]


def test_a_whole_batch_once_started_goes_past_room_and_the_window():
    share = _share(max_in_flight=3)
    assert share.acquire("a", 0, 9, 10.0, 2, whole_batch=True) == [AcquiredRange(0, 9, 1)]
    assert share.end_offset == 10
    assert share.acquire("b", 10, 19, 10.0, 100, whole_batch=True) == [], "a full window starts no batch"
    assert share.acquire("b", 0, 9, 10.0, 0, whole_batch=True) == [], "no room starts no batch"


def test_state_batches_round_trip_and_acquired_records_restore_as_available():
    share = _share()
    share.acquire("a", 0, 5, 10.0, 100)
    share.acknowledge("a", [(2, 2, [ACCEPT]), (3, 3, [RELEASE])], 20.0)
    batches = share.state_batches()
    # 3 was released, 4-5 are still acquired: both are written as available.
    assert batches == [StateBatch(0, 1, 0, 1), StateBatch(2, 2, 2, 1), StateBatch(3, 5, 0, 1)]
    restored = _share()
    restored.restore(share.start_offset, batches)
    assert restored.acquire("b", 0, 5, 10.0, 100) == [AcquiredRange(0, 1, 2), AcquiredRange(3, 5, 2)]


def test_records_deleted_from_the_log_leave_the_window():
    share = _share()
    share.acquire("a", 0, 5, 10.0, 100)
    share.move_start_to(4)
    assert share.start_offset == 4 and sorted(share.records) == [4, 5]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["fetch", "ack", "expire"]),
                          st.integers(0, 3), st.integers(0, 19), st.integers(0, 4)), max_size=60))
def test_no_record_is_held_by_two_members_and_done_records_never_return(steps):
    """Random fetches, acknowledgements and expiries: at any time each
    offset is ACQUIRED by at most one member (its state names one), an
    offset acquired is one that was available, and a done offset is never
    acquired again."""
    share = _share(limit=4, max_in_flight=12)
    holder: dict[int, str] = {}
    done: set[int] = set()
    now = 0.0
    for member, action, kind, offset, width in steps:
        now += 1.0
        if action == "fetch":
            for acquired in share.acquire(member, 0, 19, now + 3.0, 5):
                for item in range(acquired.first_offset, acquired.last_offset + 1):
                    assert item not in holder and item not in done
                    holder[item] = member
        elif action == "ack":
            last = min(offset + width, 19)
            ack_type = [ACCEPT, RELEASE, REJECT, GAP][kind]
            mine = all(holder.get(item) == member for item in range(offset, last + 1))
            code = share.acknowledge(member, [(offset, last, [ack_type])], now + 3.0)
            assert (code == ErrorCode.NONE) == mine
            if mine:
                for item in range(offset, last + 1):
                    del holder[item]
                    if ack_type != RELEASE:
                        done.add(item)
        else:
            share.expire_locks(now)
            for item in [i for i in holder if share.records.get(i) is None
                         or share.records[i].state != RecordState.ACQUIRED]:
                del holder[item]
        for item, entry in share.records.items():
            if entry.state == RecordState.ACQUIRED:
                assert holder.get(item) == entry.member_id
        assert all(item < share.start_offset or share.records[item].state in
                   (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) for item in done)

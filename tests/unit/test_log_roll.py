"""Each rule that rolls a new segment, and what rolling leaves on disk."""
from __future__ import annotations

import os

from kcore.log.segment import segment_name
from tests.support.clock import ManualClock


def test_roll_when_segment_bytes_would_be_exceeded(open_log, batch):
    one = batch(1, value_bytes=100)
    log = open_log(segment_bytes=3 * len(one))
    for _ in range(7):
        log.append(batch(1, value_bytes=100), 0)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert all(s.size <= 3 * len(one) for s in log.segments)


def test_roll_when_segment_ms_passed_between_batch_timestamps(open_log, batch):
    log = open_log(segment_ms=1000)
    log.append(batch(1, timestamp=10_000), 0)
    log.append(batch(1, timestamp=10_900), 0)
    assert len(log.segments) == 1
    log.append(batch(1, timestamp=11_001), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_each_segment_rolls_a_random_jitter_before_segment_ms(open_log, batch):
    log = open_log(segment_ms=1000, segment_jitter_ms=400)
    jitters = set()
    for round_number in range(20):
        start = 10_000 * (round_number + 1)
        log.append(batch(1, timestamp=start), 0)  # rolls: the previous segment is old
        jitter = log._roll_jitter_ms
        jitters.add(jitter)
        assert 0 <= jitter < 400
        segments = len(log.segments)
        log.append(batch(1, timestamp=start + 1000 - jitter), 0)
        assert len(log.segments) == segments
        log.append(batch(1, timestamp=start + 1001 - jitter), 0)
        assert len(log.segments) == segments + 1
    assert len(jitters) > 1


def test_a_compacted_segment_rolls_at_max_compaction_lag_ms(open_log, batch):
    log = open_log(cleanup_policy="compact", max_compaction_lag_ms=300)
    log.append(batch(1, timestamp=10_000), 0)
    log.append(batch(1, timestamp=10_300), 0)
    assert len(log.segments) == 1
    log.append(batch(1, timestamp=10_301), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    deleting = open_log(cleanup_policy="delete", max_compaction_lag_ms=300, name="d-0")
    deleting.append(batch(1, timestamp=10_000), 0)
    deleting.append(batch(1, timestamp=20_000), 0)
    assert len(deleting.segments) == 1


def test_roll_by_time_uses_wall_clock_when_batches_have_no_timestamp(open_log, batch):
    log = open_log(segment_ms=1000)
    log.append(batch(1, timestamp=-1), 0)
    now = log.active_segment.created_ms
    log.clock = ManualClock(wall_s=(now + 500) / 1000)
    log.append(batch(1, timestamp=-1), 0)
    log.clock = ManualClock(wall_s=(now + 1002) / 1000)  # past 1000 ms after float rounding
    log.append(batch(1, timestamp=-1), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_offset_index_is_full(open_log, batch):
    # 24 bytes: 3 offset entries, 2 time entries (same timestamps: only 1 used).
    log = open_log(segment_index_bytes=24, index_interval_bytes=1)
    for _ in range(6):
        log.append(batch(1), 0)
    # Entries are added from the second batch of a segment on.
    assert [s.base_offset for s in log.segments] == [0, 4]
    assert log.segments[0].offset_index.entries == 3


def test_roll_when_time_index_is_full(open_log, batch):
    # 20 bytes: 2 offset entries but only 1 time entry.
    log = open_log(segment_index_bytes=20, index_interval_bytes=1)
    for i in range(3):
        log.append(batch(1, timestamp=1000 + i), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.segments[0].time_index.entries >= 1


def test_roll_when_relative_offset_would_overflow_int32(open_log, batch):
    log = open_log()
    log.append(batch(1, base_offset=0), 0, assign_offsets=False)
    far = 2**31 + 5
    log.append(batch(1, base_offset=far), 0, assign_offsets=False)
    assert [s.base_offset for s in log.segments] == [0, far]
    assert log.log_end_offset == far + 1


def test_empty_active_segment_is_replaced_not_left_behind(open_log, batch, tmp_path):
    log = open_log()
    log.append(batch(1, base_offset=0), 0, assign_offsets=False)
    log.roll()
    log.append(batch(1, base_offset=2**31 + 100), 0, assign_offsets=False)
    assert [s.base_offset for s in log.segments] == [0, 2**31 + 100]
    assert not (tmp_path / "topic-0" / (segment_name(1) + ".log")).exists()


def test_explicit_roll_writes_the_previous_segments_index_files(open_log, batch, tmp_path):
    log = open_log(index_interval_bytes=1)
    for _ in range(4):
        log.append(batch(1), 0)
    active_index = tmp_path / "topic-0" / (segment_name(0) + ".index")
    assert os.path.getsize(active_index) == 0  # entries in memory, never preallocated
    log.roll()
    assert os.path.getsize(active_index) == 3 * 8
    # The final time-index entry records the segment's largest timestamp.
    assert log.segments[0].time_index.last_entry() == (1000, 0)
    assert os.path.getsize(tmp_path / "topic-0" / (segment_name(4) + ".index")) == 0
    assert log.roll() is log.active_segment  # nothing appended since: no new segment


def test_appended_index_equals_the_index_rebuilt_by_recovery(open_log, batch):
    log = open_log(index_interval_bytes=300)
    for i in range(40):
        log.append(batch(1 + i % 3, value_bytes=37 * (i % 5), timestamp=1000 + (i * 7919) % 500), 0)
    segment = log.active_segment
    written_index = bytes(segment.offset_index.buffer[:segment.offset_index.size_in_bytes])
    written_time = bytes(segment.time_index.buffer[:segment.time_index.size_in_bytes])
    state = (segment.next_offset, segment.max_timestamp, segment.offset_of_max_timestamp,
             segment.bytes_since_last_index_entry)
    assert segment.recover() == (0, None, 0)
    assert bytes(segment.offset_index.buffer[:segment.offset_index.size_in_bytes]) == written_index
    assert bytes(segment.time_index.buffer[:segment.time_index.size_in_bytes]) == written_time
    assert (segment.next_offset, segment.max_timestamp, segment.offset_of_max_timestamp,
            segment.bytes_since_last_index_entry) == state
    assert segment.offset_index.entries > 5

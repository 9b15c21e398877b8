"""Retention by time, size and log start offset; deferred file removal."""
from __future__ import annotations

from kcore.log.segment import segment_name
from tests.support.clock import HOUR_S, ManualClock


def fill(log, batch, count, timestamp=lambda i: 1000 + i, value_bytes=100):
    for i in range(count):
        log.append(batch(1, value_bytes=value_bytes, timestamp=timestamp(i)), 0)


def files(tmp_path):
    return sorted(p.name for p in (tmp_path / "topic-0").iterdir())


def test_retention_by_time_deletes_whole_segments_older_than_retention_ms(open_log, batch, tmp_path):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_ms=1000, file_delete_delay_ms=0)
    fill(log, batch, 6, timestamp=lambda i: [100, 200, 5000, 5100, 9000, 9100][i])
    log.clock = ManualClock(wall_s=6.5)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4]
    assert log.log_start_offset == 4
    assert segment_name(0) + ".log" not in files(tmp_path)


def test_retention_by_time_rolls_and_deletes_an_expired_active_segment(open_log, batch):
    log = open_log(retention_ms=1000, file_delete_delay_ms=0)
    fill(log, batch, 3)
    log.clock = ManualClock(wall_s=100.0)
    assert log.delete_old_segments() == 1
    assert [(s.base_offset, s.size) for s in log.segments] == [(3, 0)]
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    assert log.read(3, 100) == []


def test_retention_by_size_keeps_at_most_retention_bytes(open_log, batch):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_bytes=3 * one, retention_ms=-1,
                   file_delete_delay_ms=0)
    fill(log, batch, 7)
    assert log.size_in_bytes == 7 * one
    assert log.delete_old_segments() == 2
    assert log.size_in_bytes == 3 * one
    assert log.log_start_offset == 4


def test_retention_never_passes_the_high_watermark(open_log, batch):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_ms=1, file_delete_delay_ms=0)
    fill(log, batch, 6)
    log.clock = ManualClock(wall_s=10**9)
    assert log.delete_old_segments(high_watermark=3) == 1
    assert log.log_start_offset == 2


def test_segments_below_log_start_offset_go_even_without_delete_policy(open_log, batch):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, cleanup_policy="compact", file_delete_delay_ms=0)
    fill(log, batch, 6)
    log.clock = ManualClock(wall_s=10**9)
    assert log.maybe_increment_log_start_offset(5)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4]
    assert log.log_start_offset == 5


def test_deleted_segments_are_renamed_then_removed_after_the_delay(open_log, batch, tmp_path, read_back):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_bytes=2 * one, retention_ms=-1,
                   file_delete_delay_ms=60_000)
    fill(log, batch, 4)
    in_flight = log.read(0, 10_000)
    log.clock = clock = ManualClock(wall_s=0.0)
    assert log.delete_old_segments() == 1
    names = files(tmp_path)
    assert segment_name(0) + ".log.deleted" in names and segment_name(0) + ".log" not in names
    # A fetch slice taken before the deletion still reads.
    assert len(read_back(in_flight[:1])) == 2 * one
    clock.step(HOUR_S)  # the wall clock's steps do not count
    assert log.delete_expired_files() == 0
    clock.advance(59.0)
    assert log.delete_expired_files() == 0
    clock.advance(1.001)
    assert log.delete_expired_files() == 1
    assert not [n for n in files(tmp_path) if n.endswith(".deleted")]


def test_the_delete_delay_is_not_stretched_by_a_wall_clock_step_back(open_log, batch, tmp_path):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_bytes=2 * one, retention_ms=-1,
                   file_delete_delay_ms=60_000)
    fill(log, batch, 4)
    log.clock = clock = ManualClock()
    assert log.delete_old_segments() == 1
    clock.step(-HOUR_S)
    clock.advance(60.001)
    assert log.delete_expired_files() == 1


def test_log_start_offset_cannot_pass_the_log_end(open_log, batch):
    import pytest

    from kcore.log.errors import OffsetOutOfRangeError

    log = open_log()
    fill(log, batch, 2)
    assert not log.maybe_increment_log_start_offset(0)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(3)


def test_delete_segments_below_log_start_keeps_the_segment_holding_it(open_log, batch, tmp_path):
    import pytest

    from kcore.log.errors import OffsetOutOfRangeError

    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, retention_ms=-1, file_delete_delay_ms=0)
    fill(log, batch, 6)
    assert log.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 10_000)
    assert log.delete_segments_below_log_start() == 1
    assert [s.base_offset for s in log.segments] == [2, 4]
    assert segment_name(0) + ".log" not in files(tmp_path)
    # The batch at 3 is read from the segment that starts at 2.
    first = log.read(3, 10_000)[0]
    assert (first.position, first.size) == (one, one)
    assert log.log_start_offset == 3
    assert log.delete_segments_below_log_start() == 0

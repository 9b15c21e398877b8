"""Timestamp lookup and truncation."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder


def client_batch(timestamps, codec=0):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, ts in enumerate(timestamps):
        builder.append(i, timestamp=ts, key=None, value=b"value-%d" % i, headers=[])
    return bytearray(builder.build())


def test_offset_for_timestamp_finds_first_record_at_or_after_it_inside_a_batch(open_log):
    log = open_log(index_interval_bytes=1)
    log.append(client_batch([100, 110, 120]), 0)
    log.append(client_batch([130, 140, 150]), 0)
    log.append(client_batch([160, 170]), 0)
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(111) == (2, 120)
    assert log.offset_for_timestamp(140) == (4, 140)
    assert log.offset_for_timestamp(165) == (7, 170)
    assert log.offset_for_timestamp(171) is None


def test_offset_for_timestamp_decodes_compressed_batches(open_log):
    log = open_log()
    for codec in (1, 2, 3, 4):
        log.append(client_batch([1000 * codec, 1000 * codec + 5], codec=codec), 0)
    assert log.offset_for_timestamp(3001) == (5, 3005)
    assert log.offset_for_timestamp(4000) == (6, 4000)


def test_offset_for_timestamp_with_out_of_order_timestamps_returns_earliest_offset(open_log):
    log = open_log(index_interval_bytes=1)
    log.append(client_batch([500]), 0)
    log.append(client_batch([100]), 0)
    log.append(client_batch([700]), 0)
    assert log.offset_for_timestamp(200) == (0, 500)
    assert log.offset_for_timestamp(600) == (2, 700)


def test_offset_for_timestamp_skips_records_below_log_start_offset(open_log):
    log = open_log()
    log.append(client_batch([100, 200, 300]), 0)
    log.maybe_increment_log_start_offset(2)
    assert log.offset_for_timestamp(50) == (2, 300)


def test_offset_for_timestamp_across_segments_uses_time_index(open_log):
    log = open_log(segment_bytes=400, index_interval_bytes=1)
    for i in range(30):
        log.append(client_batch([1000 + 10 * i]), 0)
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(1155) == (16, 1160)


def test_truncate_to_removes_batches_from_the_offset_and_appends_continue(open_log, batch, read_back):
    log = open_log(index_interval_bytes=1)
    kept = [batch(2) for _ in range(3)]
    for item in kept:
        log.append(item, 0)
    for _ in range(3):
        log.append(batch(2), 0)
    assert log.truncate_to(6)
    assert log.log_end_offset == 6
    assert read_back(log.read(0, 1 << 20)) == b"".join(kept)
    assert log.append(batch(1), 1).first_offset == 6
    assert not log.truncate_to(100)


def test_truncate_to_inside_a_batch_removes_the_whole_batch(open_log, batch):
    log = open_log()
    log.append(batch(3), 0)
    log.append(batch(3), 0)
    log.truncate_to(4)
    assert log.log_end_offset == 3


def test_truncate_across_segments_deletes_later_segments(open_log, batch, tmp_path):
    one = len(batch(1, value_bytes=100))
    log = open_log(segment_bytes=2 * one, file_delete_delay_ms=0)
    for _ in range(7):
        log.append(batch(1, value_bytes=100), 0)
    log.truncate_to(3)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.log_end_offset == 3
    assert log.active_segment.offset_index.max_entries > 0  # active again: preallocated
    log.append(batch(1), 0)
    assert log.log_end_offset == 4


def test_truncate_below_first_segment_restarts_the_log_there(open_log, batch):
    log = open_log(file_delete_delay_ms=0, log_start_offset=10)
    log.append(batch(2), 0)
    assert log.segments[0].base_offset == 10
    log.truncate_to(5)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (5, 5, 1)


def test_truncate_fully_and_start_at(open_log, batch):
    log = open_log(file_delete_delay_ms=0)
    for _ in range(3):
        log.append(batch(1), 0)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (100, 100, 100)
    assert log.append(batch(1), 0).first_offset == 100
    with pytest.raises(ValueError):
        log.truncate_to(-1)

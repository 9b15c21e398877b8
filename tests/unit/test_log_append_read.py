"""Log.append and Log.read: offsets, validation, whole-batch slices."""
from __future__ import annotations

import os
import struct

import pytest

from kcore._native import append as native_append
from kcore._native import records as native_records
from kcore.log.errors import CorruptRecordError, OffsetOutOfRangeError, RecordTooLargeError


def test_append_assigns_consecutive_offsets_and_patches_leader_epoch(open_log, batch, read_back):
    log = open_log()
    first = log.append(batch(3), leader_epoch=7)
    second = log.append(batch(2), leader_epoch=8)
    assert (first.first_offset, first.last_offset, first.records_count) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    data = read_back(log.read(0, 1 << 20))
    headers = native_records.validate_batches(data)
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 7), (3, 8)]


def test_append_reports_max_timestamp_and_its_offset(open_log, batch):
    log = open_log()
    log.append(batch(1, timestamp=50), 0)
    info = log.append(batch(2, timestamp=100, timestamp_deltas=[5, 1]) + batch(1, timestamp=90), 0)
    assert (info.first_offset, info.last_offset) == (1, 3)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (105, 2)
    assert len(info.batches) == 2 and info.log_append_time == -1


def test_read_returns_bytes_identical_to_what_was_appended(open_log, batch, read_back):
    log = open_log()
    appended = [batch(i + 1, value_bytes=30 * i) for i in range(10)]
    for item in appended:
        log.append(item, 0)
    assert read_back(log.read(0, 1 << 20)) == b"".join(appended)


def test_read_inside_a_batch_returns_the_whole_batch(open_log, batch, read_back):
    log = open_log(index_interval_bytes=1)
    log.append(batch(5), 0)
    containing = batch(5)
    log.append(containing, 0)
    log.append(batch(5), 0)
    slices = log.read(7, len(containing))
    assert read_back(slices) == bytes(containing)
    assert native_records.parse_batch_header(read_back(slices)).base_offset == 5


def test_oversized_first_batch_is_returned_whole_with_min_one_message(open_log, batch, read_back):
    log = open_log()
    big = batch(1, value_bytes=5000)
    log.append(big, 0)
    log.append(batch(1), 0)
    assert read_back(log.read(0, 100)) == bytes(big)
    assert log.read(0, 100, min_one_message=False) == []


def test_read_stops_at_max_bytes_on_batch_boundary(open_log, batch, read_back):
    log = open_log(index_interval_bytes=64)
    items = [batch(1, value_bytes=100) for _ in range(20)]
    for item in items:
        log.append(item, 0)
    size = len(items[0])
    slices = log.read(3, 5 * size + size // 2)
    assert sum(s.size for s in slices) == 5 * size
    assert read_back(slices) == b"".join(items[3:8])


def test_read_excludes_batches_at_or_past_max_offset(open_log, batch, read_back):
    log = open_log()
    for _ in range(4):
        log.append(batch(2), 0)
    data = read_back(log.read(0, 1 << 20, max_offset=5))
    assert [info.base_offset for info in native_records.validate_batches(data)] == [0, 2]
    assert log.read(4, 1 << 20, max_offset=5) == []
    assert log.read(6, 1 << 20, max_offset=5) == []


def test_read_at_log_end_is_empty_and_outside_range_raises(open_log, batch):
    log = open_log()
    log.append(batch(2), 0)
    assert log.read(2, 100) == []
    with pytest.raises(OffsetOutOfRangeError) as raised:
        log.read(3, 100)
    assert raised.value.error_code == 1
    log.maybe_increment_log_start_offset(1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_read_spans_segments_until_max_bytes(open_log, batch, read_back):
    items = [batch(1, value_bytes=100) for _ in range(6)]
    log = open_log(segment_bytes=2 * len(items[0]))
    for item in items:
        log.append(item, 0)
    assert len(log.segments) == 3
    slices = log.read(1, 1 << 20)
    assert len(slices) == 3
    assert read_back(slices) == b"".join(items[1:])


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b.__setitem__(-1, b[-1] ^ 1), "crc"),
    (lambda b: b.__setitem__(16, 1), "magic"),
    (lambda b: b.__delitem__(slice(-3, None)), "size"),
])
# From OVERLAP_BYTES on the CRC is checked while the bytes are written, and a
# bad batch is cut back out of the file (kcore/_native/append.pyx).
@pytest.mark.parametrize("value_bytes", [10, native_append.OVERLAP_BYTES], ids=["small", "large"])
@pytest.mark.parametrize("preallocate", [False, True])
def test_corrupt_batch_is_rejected_and_nothing_written(open_log, batch, read_back, damage, reason,
                                                      value_bytes, preallocate):
    log = open_log(preallocate=preallocate, segment_bytes=8 << 20)
    first = batch(1)
    log.append(first, 0)
    size_before = log.size_in_bytes
    file_length = os.fstat(log.active_segment.fd).st_size
    bad = batch(2, value_bytes=value_bytes) + batch(1, value_bytes=value_bytes)
    damage(bad)
    with pytest.raises(CorruptRecordError) as raised:
        log.append(bad, 0)
    assert raised.value.reason == reason and raised.value.error_code == 2
    assert (log.log_end_offset, log.size_in_bytes) == (1, size_before)
    assert os.fstat(log.active_segment.fd).st_size == file_length
    # The next append lands right after the first batch, and the region the
    # bad bytes passed through reads back as the new data only.
    good = batch(2, value_bytes=value_bytes)
    assert log.append(good, 0).first_offset == 1
    assert read_back(log.read(0, 16 << 20)) == bytes(first) + bytes(good)


def test_wrong_record_count_is_invalid_record(open_log, batch):
    log = open_log()
    with pytest.raises(CorruptRecordError) as raised:
        log.append(batch(2, last_offset_delta=5), 0)
    assert raised.value.reason == "count" and raised.value.error_code == 87
    assert log.size_in_bytes == 0


def test_batch_over_max_message_bytes_is_rejected(open_log, batch):
    log = open_log(max_message_bytes=500)
    log.append(batch(1, value_bytes=400), 0)
    with pytest.raises(RecordTooLargeError) as raised:
        log.append(batch(1, value_bytes=100) + batch(1, value_bytes=600), 0)
    assert raised.value.error_code == 10
    assert log.log_end_offset == 1


def test_append_of_empty_buffer_is_rejected(open_log):
    with pytest.raises(CorruptRecordError):
        open_log().append(bytearray(), 0)


def test_replica_append_keeps_the_batches_offsets(open_log, batch, read_back):
    log = open_log()
    copied = batch(3, base_offset=10, partition_leader_epoch=4) + batch(2, base_offset=13)
    info = log.append(copied, leader_epoch=9, assign_offsets=False)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (10, 14, 15)
    assert read_back(log.read(10, 1 << 20)) == bytes(copied)
    with pytest.raises(CorruptRecordError) as raised:
        log.append(batch(1, base_offset=12), 0, assign_offsets=False)
    assert raised.value.reason == "offset"


def test_append_without_validation_trusts_crc_but_checks_sizes(open_log, batch):
    log = open_log()
    unchecked = batch(1)
    unchecked[-1] ^= 1
    assert log.append(unchecked, 0, validate=False).first_offset == 0
    with pytest.raises(CorruptRecordError):
        log.append(batch(1)[:-1], 0, validate=False)


def test_append_accepts_a_writable_memoryview_slice(open_log, batch, read_back):
    log = open_log()
    frame = bytearray(b"HEAD") + batch(2) + bytearray(b"TAIL")
    view = memoryview(frame)[4:-4]
    log.append(view, 3)
    assert struct.unpack_from(">q", frame, 4)[0] == 0
    assert read_back(log.read(0, 1000)) == bytes(frame[4:-4])


def test_a_read_of_the_rest_of_a_segment_walks_no_header(open_log, batch, read_back, monkeypatch):
    """A consumer at the high watermark or a follower at the log end: the
    rest of the segment fits and lies below max_offset, so the slice is
    known without reading a header; otherwise the walk finds its end."""
    from kcore.log import segment as segment_module
    walks = []
    walk = segment_module.native_segment.read_extent
    monkeypatch.setattr(segment_module.native_segment, "read_extent",
                        lambda *args, **kwargs: walks.append(args) or walk(*args, **kwargs))
    log = open_log()
    items = [batch(2) for _ in range(4)]
    for item in items:
        log.append(item, 0)
    assert read_back(log.read(2, 1 << 20)) == b"".join(items[1:])
    assert read_back(log.read(2, 1 << 20, max_offset=8)) == b"".join(items[1:])
    assert walks == []
    assert read_back(log.read(2, 1 << 20, max_offset=7)) == b"".join(items[1:3])
    assert read_back(log.read(0, 2 * len(items[0]))) == b"".join(items[:2])
    assert len(walks) == 2

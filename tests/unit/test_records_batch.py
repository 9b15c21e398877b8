"""kcore.protocol.records: building batches and reading them back through the view."""

import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcore.protocol.compression import CompressionType, UnsupportedCodecError
from kcore.protocol.records import (
    BATCH_HEADER_SIZE,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
)

NOW = 1_700_000_000_000

headers_strategy = st.lists(
    st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=20)), max_size=4)


@st.composite
def record_lists(draw):
    count = draw(st.integers(1, 25))
    offset = draw(st.integers(0, 2**40))
    records = []
    for _ in range(count):
        records.append(Record(
            offset=offset,
            # Deltas against the first record go both ways (clients may reorder).
            timestamp=NOW + draw(st.integers(-(2**33), 2**33)),
            key=draw(st.none() | st.binary(max_size=64)),
            value=draw(st.none() | st.binary(max_size=400)),
            headers=draw(headers_strategy),
        ))
        offset += draw(st.integers(1, 1000))  # compaction leaves gaps
    return records


@settings(max_examples=200, deadline=None)
@given(records=record_lists(), codec=st.sampled_from(list(CompressionType)),
       producer_id=st.integers(-1, 2**62), producer_epoch=st.integers(-1, 2**15 - 1),
       base_sequence=st.integers(-1, 2**31 - 1), transactional=st.booleans(),
       leader_epoch=st.integers(-1, 2**31 - 1))
def test_built_batch_reads_back_every_record_and_header_field(
        records, codec, producer_id, producer_epoch, base_sequence, transactional, leader_epoch):
    base_offset = records[0].offset
    data = build_batch(records, base_offset=base_offset, codec=codec, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=base_sequence,
                       is_transactional=transactional, partition_leader_epoch=leader_epoch)
    batch = RecordBatch(data)
    assert batch.records() == records
    assert batch.is_valid()
    assert batch.size_in_bytes == len(data) == batch.batch_length + 12
    assert batch.magic == 2
    assert batch.base_offset == base_offset
    assert batch.last_offset == records[-1].offset
    assert batch.records_count == len(records)
    assert batch.compression == codec
    assert batch.base_timestamp == records[0].timestamp
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        producer_id, producer_epoch, base_sequence)
    assert batch.partition_leader_epoch == leader_epoch
    assert batch.is_transactional == transactional
    assert not batch.is_control
    assert batch.timestamp_type is TimestampType.CREATE_TIME


def test_header_bytes_sit_at_kafka_positions():
    data = build_batch([Record(timestamp=NOW, key=b"k", value=b"v")], base_offset=42,
                       producer_id=7, producer_epoch=3, base_sequence=11,
                       is_transactional=True, partition_leader_epoch=5)
    (base_offset, batch_length, leader_epoch, magic, crc, attributes, last_offset_delta,
     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
     records_count) = struct.unpack_from(">qiibIhiqqqhii", data)
    assert (base_offset, batch_length, leader_epoch, magic) == (42, len(data) - 12, 5, 2)
    assert (attributes, last_offset_delta, records_count) == (0x10, 0, 1)
    assert (base_timestamp, max_timestamp) == (NOW, NOW)
    assert (producer_id, producer_epoch, base_sequence) == (7, 3, 11)
    # length 8 (zigzag 16), attributes 0, timestampDelta 0, offsetDelta 0,
    # key and value length 1 (zigzag 2), no headers.
    assert data[BATCH_HEADER_SIZE:] == bytes([0x10, 0, 0, 0, 2]) + b"k" + bytes([2]) + b"v\x00"


def test_records_without_offsets_follow_base_offset_and_get_the_build_time():
    before = int(time.time() * 1000)
    batch = RecordBatch(build_batch([Record(value=b"a"), Record(value=b"b")], base_offset=100))
    after = int(time.time() * 1000)
    records = batch.records()
    assert [r.offset for r in records] == [100, 101]
    assert all(before <= r.timestamp <= after for r in records)
    assert batch.last_offset_delta == 1


def test_null_key_null_value_and_null_header_value_stay_null():
    record = Record(offset=0, timestamp=NOW, key=None, value=None, headers=[("h", None)])
    [decoded] = RecordBatch(build_batch([record])).records()
    assert decoded.key is None and decoded.value is None
    assert decoded.headers == [("h", None)]


def test_empty_key_and_value_differ_from_null():
    record = Record(offset=0, timestamp=NOW, key=b"", value=b"", headers=[("", b"")])
    [decoded] = RecordBatch(build_batch([record])).records()
    assert decoded.key == b"" and decoded.value == b""
    assert decoded.headers == [("", b"")]


def test_unicode_header_keys_round_trip():
    record = Record(offset=0, timestamp=NOW, value=b"x", headers=[("trace-id ✓", b"1")])
    assert RecordBatch(build_batch([record])).records()[0].headers == [("trace-id ✓", b"1")]


def test_explicit_last_offset_delta_keeps_a_compacted_tail():
    records = [Record(offset=10, timestamp=NOW, value=b"a"), Record(offset=13, timestamp=NOW)]
    batch = RecordBatch(build_batch(records, base_offset=10, last_offset_delta=9))
    assert batch.last_offset == 19
    assert [r.offset for r in batch.records()] == [10, 13]


def test_log_append_time_batch_reports_max_timestamp_for_every_record():
    records = [Record(timestamp=NOW + i, value=b"x") for i in range(3)]
    data = build_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME,
                       max_timestamp=NOW + 5000)
    batch = RecordBatch(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert data[22] & 0x08
    assert [r.timestamp for r in batch.records()] == [NOW + 5000] * 3


def test_last_sequence_wraps_past_int32_max_like_kafka():
    records = [Record(timestamp=NOW, value=b"x")] * 5
    batch = RecordBatch(build_batch(records, producer_id=1, producer_epoch=0,
                                    base_sequence=2**31 - 3))
    assert batch.last_sequence == 1
    assert RecordBatch(build_batch(records, base_sequence=10)).last_sequence == 14
    assert RecordBatch(build_batch(records)).last_sequence == -1


def test_delete_horizon_bit_exposes_base_timestamp():
    data = build_batch([Record(timestamp=NOW, value=b"x")])
    assert RecordBatch(data).delete_horizon_ms is None
    data[22] |= 0x40
    batch = RecordBatch(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == NOW


def test_view_reads_a_batch_inside_a_larger_buffer():
    first = build_batch([Record(timestamp=NOW, value=b"first")])
    second = build_batch([Record(timestamp=NOW, value=b"second")], base_offset=1)
    batch = RecordBatch(bytes(first + second), position=len(first))
    assert batch.position == len(first)
    assert batch.records()[0].value == b"second"
    assert batch.to_bytes() == bytes(second)


def test_builder_rejects_empty_batches_disordered_offsets_and_unknown_codecs():
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(offset=5, timestamp=NOW), Record(offset=5, timestamp=NOW)],
                    base_offset=5)
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(offset=3, timestamp=NOW)], base_offset=4)
    with pytest.raises(ValueError, match="last_offset_delta"):
        build_batch([Record(offset=0, timestamp=NOW), Record(offset=4, timestamp=NOW)],
                    last_offset_delta=2)
    with pytest.raises(UnsupportedCodecError):
        build_batch([Record(timestamp=NOW)], codec=5)

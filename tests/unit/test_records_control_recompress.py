"""Transaction markers (control batches) and recompress_batch (compression.type)."""

import itertools
import struct
import tracemalloc

import pytest

from kcore._native.records import crc32c
from kcore.protocol.compression import CompressionType, UnsupportedCodecError
from kcore.protocol.records import (
    BATCH_HEADER_SIZE,
    ControlType,
    InvalidRecordError,
    Record,
    RecordBatch,
    RecordsTooLargeError,
    TimestampType,
    build_batch,
    build_control_batch,
    recompress_batch,
)
from tests.support.bombs import bomb_batch

NOW = 1_700_000_000_000
CODECS = list(CompressionType)


def java_style_marker(control_type: int, coordinator_epoch: int) -> bytearray:
    """A marker laid out field by field from the spec, independent of the builder."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = bytes([0, 0, 0]) + bytes([len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\0"
    record = bytes([len(body) * 2]) + body
    return build_batch_from_header(record, attributes=0x30, producer_id=5, producer_epoch=2)


def build_batch_from_header(records_section: bytes, *, attributes: int, producer_id: int,
                            producer_epoch: int) -> bytearray:
    batch = bytearray(struct.pack(">qiibIhiqqqhii", 30, 49 + len(records_section), 0, 2, 0,
                                  attributes, 0, NOW, NOW, producer_id, producer_epoch, -1, 1))
    batch += records_section
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return batch


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda t: t.name)
def test_control_batch_round_trips_type_and_coordinator_epoch(control_type):
    data = build_control_batch(control_type, producer_id=1234, producer_epoch=7,
                               coordinator_epoch=42, base_offset=99, partition_leader_epoch=3,
                               timestamp=NOW)
    batch = RecordBatch(data)
    assert batch.is_control and batch.is_transactional and batch.is_valid()
    assert batch.control_type is control_type
    assert batch.coordinator_epoch == 42
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1234, 7, -1)
    assert (batch.base_offset, batch.records_count, batch.last_offset_delta) == (99, 1, 0)
    assert batch.compression == CompressionType.NONE
    assert batch.partition_leader_epoch == 3 and batch.base_timestamp == NOW
    assert data[21:23] == b"\x00\x30"


def test_marker_laid_out_from_the_spec_decodes():
    batch = RecordBatch(java_style_marker(ControlType.ABORT, 65536))
    assert batch.is_valid()
    assert batch.control_type is ControlType.ABORT
    assert batch.coordinator_epoch == 65536
    assert bytes(build_control_batch(ControlType.ABORT, producer_id=5, producer_epoch=2,
                                     coordinator_epoch=65536, base_offset=30, timestamp=NOW,
                                     partition_leader_epoch=0)) == java_style_marker(0, 65536)


def test_control_fields_on_a_data_batch_raise():
    batch = RecordBatch(build_batch([Record(timestamp=NOW, value=b"x")]))
    with pytest.raises(ValueError, match="not a control batch"):
        _ = batch.control_type


def test_unknown_control_type_is_corrupt():
    with pytest.raises(InvalidRecordError, match="unknown control record type 7"):
        _ = RecordBatch(java_style_marker(7, 0)).control_type


def test_build_control_batch_rejects_unknown_types():
    with pytest.raises(ValueError):
        build_control_batch(3, producer_id=1, producer_epoch=0)


def records_with_gaps() -> list[Record]:
    return [Record(offset=1000 + 3 * i, timestamp=NOW + (-1) ** i * 50 * i,
                   key=b"key-%d" % i, value=b"value %d " % i * 30,
                   headers=[("n", b"%d" % i), ("null", None)]) for i in range(12)]


@pytest.mark.parametrize("target", CODECS, ids=lambda c: c.kafka_name)
@pytest.mark.parametrize("source", CODECS, ids=lambda c: c.kafka_name)
def test_recompress_keeps_offsets_timestamps_and_producer_fields(source, target):
    records = records_with_gaps()
    fields = dict(base_offset=1000, producer_id=88, producer_epoch=4, base_sequence=500,
                  is_transactional=True, partition_leader_epoch=6, last_offset_delta=40)
    original = build_batch(records, codec=source, **fields)
    converted = recompress_batch(original, target)
    batch = RecordBatch(converted)
    assert batch.compression == target and batch.is_valid()
    assert batch.records() == records
    before = RecordBatch(original)
    for name in ("base_offset", "last_offset_delta", "partition_leader_epoch", "base_timestamp",
                 "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                 "records_count", "is_transactional", "timestamp_type"):
        assert getattr(batch, name) == getattr(before, name), name
    assert converted == build_batch(records, codec=target, **fields)


def test_recompress_keeps_raw_deltas_of_log_append_time_batches():
    records = [Record(offset=i, timestamp=NOW + i, value=b"v" * 50) for i in range(4)]
    fields = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=NOW + 10_000)
    original = build_batch(records, codec=CompressionType.GZIP, **fields)
    converted = recompress_batch(original, CompressionType.NONE)
    assert converted == build_batch(records, **fields)
    assert [r.timestamp for r in RecordBatch(converted).records()] == [NOW + 10_000] * 4


def test_recompress_keeps_the_delete_horizon_flag():
    original = build_batch([Record(offset=0, timestamp=NOW, value=b"x" * 100)])
    original[22] |= 0x40
    converted = RecordBatch(recompress_batch(original, CompressionType.ZSTD))
    assert converted.has_delete_horizon and converted.delete_horizon_ms == NOW


def test_recompress_returns_control_and_same_codec_batches_unchanged():
    marker = build_control_batch(ControlType.COMMIT, producer_id=1, producer_epoch=0)
    assert recompress_batch(marker, CompressionType.ZSTD) == marker
    data = build_batch([Record(timestamp=NOW, value=b"x")], codec=CompressionType.LZ4)
    assert recompress_batch(memoryview(data), CompressionType.LZ4) == data


def test_recompress_returns_an_emptied_compacted_batch_unchanged():
    data = build_batch([Record(timestamp=NOW, value=b"x")], codec=CompressionType.GZIP)
    empty = bytearray(data[:BATCH_HEADER_SIZE])
    struct.pack_into(">i", empty, 8, BATCH_HEADER_SIZE - 12)
    struct.pack_into(">i", empty, 57, 0)
    assert recompress_batch(empty, CompressionType.NONE) == empty
    assert RecordBatch(empty).records() == []


def test_recompress_rejects_unassigned_codecs():
    data = build_batch([Record(timestamp=NOW, value=b"x")])
    with pytest.raises(UnsupportedCodecError):
        recompress_batch(data, 6)


def test_recompress_refuses_records_inflating_past_its_limit_before_building_any():
    bomb = bomb_batch(CompressionType.ZSTD, 1024)  # 1 GiB of records in ~46 KiB
    tracemalloc.start()
    try:
        with pytest.raises(RecordsTooLargeError) as raised:
            recompress_batch(bomb, CompressionType.LZ4, max_size=16 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.max_size == 16 << 20 and peak < 48 << 20
    assert isinstance(raised.value, InvalidRecordError)  # readers skipping bad batches skip it


@pytest.mark.parametrize("declared", [2, 4])
def test_recompress_refuses_a_batch_whose_record_count_is_not_its_records(declared):
    records = [Record(offset=i, timestamp=NOW, value=b"v" * 30) for i in range(3)]
    data = build_batch(records, codec=CompressionType.GZIP)
    struct.pack_into(">i", data, 57, declared)
    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
    with pytest.raises(InvalidRecordError, match=f"declares {declared} records but holds 3"):
        recompress_batch(data, CompressionType.ZSTD)


def test_recompress_refuses_malformed_records():
    data = build_batch([Record(offset=0, timestamp=NOW, value=b"v" * 30)])
    data[BATCH_HEADER_SIZE] = 0x7F  # the record's length now runs past the section
    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
    with pytest.raises(InvalidRecordError, match="malformed record"):
        recompress_batch(data, CompressionType.ZSTD)


def test_stream_decodes_records_as_they_are_taken():
    bomb = bomb_batch(CompressionType.ZSTD, 48)  # 48 records of 1 MiB
    batch = RecordBatch(bomb)
    tracemalloc.start()
    try:
        records = batch.stream()
        first = list(itertools.islice(records, 2))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r.offset for r in first] == [0, 1] and first[1].key == b"key-1"
    # The 48 MiB section and two 1 MiB values, not 48 decoded records (96 MiB).
    assert held < 56 << 20
    assert sum(1 for _ in records) == 46

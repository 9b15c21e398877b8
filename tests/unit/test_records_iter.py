"""Iterating concatenated batches, CRC checks and corrupt input."""

import struct

import cramjam
import pytest

from kcore._native.records import crc32c
from kcore.protocol.compression import CompressionType
from kcore.protocol.records import (
    BATCH_HEADER_SIZE,
    ControlType,
    CorruptBatchError,
    InvalidRecordError,
    Record,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
    iter_records,
)

NOW = 1_700_000_000_000


def three_batches() -> bytes:
    out = bytearray()
    offset = 0
    for count, codec in ((3, CompressionType.NONE), (2, CompressionType.ZSTD),
                         (4, CompressionType.GZIP)):
        records = [Record(timestamp=NOW + i, key=b"k%d" % i, value=b"v" * (10 + i))
                   for i in range(count)]
        out += build_batch(records, base_offset=offset, codec=codec)
        offset += count
    return bytes(out)


def restamp_crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))


def test_iter_batches_yields_each_batch_with_its_position():
    data = three_batches()
    batches = list(iter_batches(data))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 2), (3, 4), (5, 8)]
    assert batches[0].position == 0
    assert batches[1].position == batches[0].size_in_bytes
    assert sum(b.size_in_bytes for b in batches) == len(data)


def test_iter_batches_stops_cleanly_at_every_partial_trailing_batch():
    data = three_batches()
    sizes = [b.size_in_bytes for b in iter_batches(data)]
    boundaries = [0, sizes[0], sizes[0] + sizes[1], len(data)]
    for cut in range(len(data) + 1):
        whole = sum(1 for boundary in boundaries[1:] if boundary <= cut)
        assert len(list(iter_batches(data[:cut]))) == whole, cut


def test_iter_records_yields_offsets_across_batches():
    assert [r.offset for r in iter_records(three_batches())] == list(range(9))


def test_iter_records_skips_transaction_markers_unless_asked():
    data = bytes(build_batch([Record(timestamp=NOW, value=b"txn")], producer_id=9,
                             producer_epoch=0, base_sequence=0, is_transactional=True)
                 + build_control_batch(ControlType.COMMIT, producer_id=9, producer_epoch=0,
                                       base_offset=1, timestamp=NOW))
    assert [r.value for r in iter_records(data)] == [b"txn"]
    assert [r.offset for r in iter_records(data, include_control=True)] == [0, 1]


def test_iter_batches_raises_on_a_length_smaller_than_a_header():
    data = bytearray(three_batches())
    struct.pack_into(">i", data, 8, 10)
    with pytest.raises(CorruptBatchError) as info:
        list(iter_batches(data))
    assert info.value.reason == "size"


def test_view_rejects_other_magic_values():
    data = build_batch([Record(timestamp=NOW, value=b"x")])
    data[16] = 1
    with pytest.raises(CorruptBatchError) as info:
        RecordBatch(data)
    assert info.value.reason == "magic"


def test_view_rejects_a_batch_longer_than_the_buffer():
    data = build_batch([Record(timestamp=NOW, value=b"x")])
    with pytest.raises(CorruptBatchError):
        RecordBatch(data[:-1])
    with pytest.raises(CorruptBatchError):
        RecordBatch(data[:BATCH_HEADER_SIZE - 1])


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.kafka_name)
def test_crc_check_fails_on_any_flipped_covered_byte(codec):
    data = build_batch([Record(timestamp=NOW, key=b"key", value=b"value" * 20)] * 3, codec=codec)
    assert RecordBatch(data).is_valid()
    for position in range(21, len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x01
        assert not RecordBatch(flipped).is_valid(), position


def test_base_offset_and_leader_epoch_are_outside_the_crc():
    data = build_batch([Record(timestamp=NOW, value=b"x")])
    struct.pack_into(">q", data, 0, 123456)
    struct.pack_into(">i", data, 12, 77)
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert batch.base_offset == 123456 and batch.partition_leader_epoch == 77


def test_record_count_above_the_records_present_is_corrupt():
    data = build_batch([Record(timestamp=NOW, value=b"x")] * 2)
    struct.pack_into(">i", data, 57, 3)
    restamp_crc(data)
    with pytest.raises(InvalidRecordError, match="record 2 of 3"):
        RecordBatch(data).records()


def test_bytes_left_after_the_declared_records_are_corrupt():
    data = build_batch([Record(timestamp=NOW, value=b"x")] * 2)
    struct.pack_into(">i", data, 57, 1)
    restamp_crc(data)
    with pytest.raises(InvalidRecordError, match="left after 1 records"):
        RecordBatch(data).records()


def test_record_length_overrunning_the_batch_is_corrupt():
    data = build_batch([Record(timestamp=NOW, value=b"abc")])
    data[BATCH_HEADER_SIZE] = 0x7E  # length 63 > what follows
    with pytest.raises(InvalidRecordError) as info:
        RecordBatch(data).records()
    assert isinstance(info.value, CorruptBatchError) and info.value.reason == "records"


def test_undecodable_compressed_section_is_corrupt():
    data = build_batch([Record(timestamp=NOW, value=b"v" * 500)], codec=CompressionType.LZ4)
    data[BATCH_HEADER_SIZE] ^= 0xFF  # the LZ4 frame magic
    with pytest.raises(InvalidRecordError, match="decompress"):
        RecordBatch(data).records()


def test_raw_snappy_batch_as_librdkafka_writes_it_decodes():
    records = [Record(offset=i, timestamp=NOW + i, key=b"k", value=b"payload %d " % i * 20)
               for i in range(5)]
    plain = build_batch(records)
    raw = bytes(cramjam.snappy.compress_raw(bytes(plain[BATCH_HEADER_SIZE:])))
    batch = bytearray(plain[:BATCH_HEADER_SIZE]) + raw
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    batch[22] |= CompressionType.SNAPPY
    restamp_crc(batch)
    view = RecordBatch(batch)
    assert view.is_valid() and view.compression == CompressionType.SNAPPY
    assert view.records() == records
    xerial = RecordBatch(build_batch(records, codec=CompressionType.SNAPPY))
    assert xerial.to_bytes()[BATCH_HEADER_SIZE:BATCH_HEADER_SIZE + 8] == b"\x82SNAPPY\x00"
    assert xerial.records() == records

"""Batches built by real client libraries (kafka-python, aiokafka), every
codec: append, read back byte-identical but for the patched baseOffset and
partitionLeaderEpoch, and decode with the client's own reader."""
from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder
from aiokafka.record.memory_records import MemoryRecords as AiokafkaRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder
from kafka.record.memory_records import MemoryRecords as KafkaPythonRecords

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BUILDERS = {"kafka-python": (KafkaPythonBuilder, KafkaPythonRecords),
            "aiokafka": (AiokafkaBuilder, AiokafkaRecords)}


def build(builder_class, codec, count, start, producer_id=-1, base_sequence=-1):
    builder = builder_class(magic=2, compression_type=codec, is_transactional=0,
                            producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                            base_sequence=base_sequence, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_700_000_000_000 + start + i, key=b"key-%d" % (start + i),
                       value=(b"value-%d-" % (start + i)) * 20, headers=[("h", b"v")])
    return bytearray(builder.build())


def decode(records_class, data):
    records = records_class(bytes(data))
    out = []
    while records.has_next():
        batch = records.next_batch()
        out += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return out


@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
@pytest.mark.parametrize("client", BUILDERS.keys())
def test_client_built_batches_append_and_read_back_identical(open_log, read_back, client, codec):
    builder_class, records_class = BUILDERS[client]
    log = open_log(index_interval_bytes=256)
    originals = [build(builder_class, codec, 10, 10 * i, producer_id=42, base_sequence=10 * i)
                 for i in range(5)]
    for batch in originals:
        log.append(bytearray(batch), leader_epoch=3)
    data = read_back(log.read(0, 1 << 20))
    position = 0
    for i, original in enumerate(originals):
        stored = data[position:position + len(original)]
        assert struct.unpack_from(">qii", stored) == (10 * i, len(original) - 12, 3)
        assert stored[16:] == bytes(original[16:])  # magic, CRC and all that it covers
        position += len(original)
    assert position == len(data)
    decoded = decode(records_class, data)
    assert [r[0] for r in decoded] == list(range(50))
    assert [r[2] for r in decoded] == [b"key-%d" % i for i in range(50)]
    assert decoded[17][1] == 1_700_000_000_000 + 17
    assert decoded[17][3] == b"value-17-" * 20


@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
def test_fetch_from_offset_inside_a_compressed_client_batch_returns_it_whole(open_log, read_back, codec):
    log = open_log()
    batches = [build(KafkaPythonBuilder, codec, 10, 10 * i) for i in range(3)]
    for batch in batches:
        log.append(batch, 0)
    data = read_back(log.read(15, 1))
    assert data[12:] == bytes(batches[1][12:])
    assert [r[0] for r in decode(KafkaPythonRecords, data)] == list(range(10, 20))


def test_client_batches_survive_recovery(open_log, read_back):
    log = open_log(segment_bytes=4000)
    for i, codec in enumerate(CODECS.values()):
        log.append(build(AiokafkaBuilder, codec, 20, 20 * i), 0)
    before = read_back(log.read(0, 1 << 20))
    log.close()
    reopened = open_log(recovery_point=0)
    assert reopened.log_end_offset == 100
    assert read_back(reopened.read(0, 1 << 20)) == before

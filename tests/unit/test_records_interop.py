"""Interop with real clients' record code, both ways, every codec.

kafka-python's and aiokafka's (C extension and pure Python) batch builders
write batches that kcore must decode identically to the clients' own readers;
batches kcore builds must decode in those readers with a valid CRC.
"""

import dataclasses

import aiokafka.record._crecords as aiokafka_c
import aiokafka.record.default_records as aiokafka_py
import kafka.record.default_records as kafka_python
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcore.protocol.compression import CompressionType
from kcore.protocol.records import ControlType, Record, RecordBatch, build_batch, build_control_batch

NOW = 1_700_000_000_000
CODECS = list(CompressionType)

BUILDERS = {
    "kafka-python": kafka_python.DefaultRecordBatchBuilder,
    "aiokafka-c": aiokafka_c.DefaultRecordBatchBuilder,
    "aiokafka-py": aiokafka_py._DefaultRecordBatchBuilderPy,
}
READERS = {
    "kafka-python": kafka_python.DefaultRecordBatch,
    "aiokafka-c": aiokafka_c.DefaultRecordBatch,
    "aiokafka-py": aiokafka_py._DefaultRecordBatchPy,
}


def sample_records() -> list[Record]:
    """Compressible values (the Python clients fall back to no compression when it does
    not shrink the batch), null key/value, null header value, a negative timestamp delta."""
    return [
        Record(offset=0, timestamp=NOW, key=b"user-1", value=b'{"event": "login"} ' * 30,
               headers=[("trace", b"abc"), ("empty", None)]),
        Record(offset=1, timestamp=NOW - 1500, key=None, value=b'{"event": "view"} ' * 30,
               headers=[]),
        Record(offset=2, timestamp=NOW + 20, key=b"user-3", value=None,
               headers=[("h", b"")]),
        Record(offset=3, timestamp=NOW + 7, key=b"", value=b"x" * 700, headers=[]),
    ]


def client_record_tuple(record) -> tuple:
    return (record.offset, record.timestamp, record.key, record.value,
            [tuple(h) for h in record.headers])


def kcore_record_tuple(record: Record) -> tuple:
    return (record.offset, record.timestamp, record.key, record.value,
            [tuple(h) for h in record.headers])


def build_with_client(client: str, codec: int, records: list[Record], *, producer_id=-1,
                      producer_epoch=-1, base_sequence=-1, transactional=False) -> bytes:
    builder = BUILDERS[client](2, codec, transactional, producer_id, producer_epoch,
                               base_sequence, 1 << 20)
    for record in records:
        builder.append(record.offset, record.timestamp, record.key, record.value,
                       list(record.headers))
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.kafka_name)
@pytest.mark.parametrize("client", BUILDERS)
def test_client_built_batch_decodes_identically_in_kcore(client, codec):
    records = sample_records()
    data = build_with_client(client, codec, records, producer_id=4000, producer_epoch=2,
                             base_sequence=17)
    batch = RecordBatch(data)
    assert batch.compression == codec
    assert batch.is_valid()
    assert batch.size_in_bytes == len(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4000, 2, 17)
    assert batch.last_sequence == 20
    assert batch.base_timestamp == NOW and batch.max_timestamp == NOW + 20
    decoded = [kcore_record_tuple(r) for r in batch.records()]
    assert decoded == [kcore_record_tuple(r) for r in records]
    theirs = [client_record_tuple(r) for r in READERS[client](data)]
    assert decoded == theirs


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.kafka_name)
@pytest.mark.parametrize("client", READERS)
def test_kcore_built_batch_decodes_in_client_readers(client, codec):
    records = [dataclasses.replace(r, offset=r.offset + 500) for r in sample_records()]
    data = bytes(build_batch(records, base_offset=500, codec=codec, producer_id=77,
                             producer_epoch=1, base_sequence=3, is_transactional=True,
                             partition_leader_epoch=4))
    reader = READERS[client](data)
    assert reader.validate_crc()
    assert reader.compression_type == codec
    assert reader.base_offset == 500
    assert reader.is_transactional and not reader.is_control_batch
    assert (reader.producer_id, reader.producer_epoch, reader.base_sequence) == (77, 1, 3)
    assert reader.next_offset == 504
    assert [client_record_tuple(r) for r in reader] == [kcore_record_tuple(r) for r in records]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.SNAPPY,
                                   CompressionType.ZSTD], ids=lambda c: c.kafka_name)
def test_kcore_bytes_equal_kafka_python_bytes_where_encoders_are_deterministic(codec):
    """Same records and header fields give byte-identical batches (CRC included).
    gzip (kafka-python stamps the time into the gzip header, level 9) and lz4 (it
    stores the content size) legitimately differ and are covered by decoding."""
    records = sample_records()
    ours = bytes(build_batch(records, codec=codec, partition_leader_epoch=0))
    assert ours == build_with_client("kafka-python", codec, records)


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda t: t.name)
@pytest.mark.parametrize("client", READERS)
def test_kcore_control_batch_reads_as_a_marker_in_client_readers(client, control_type):
    data = bytes(build_control_batch(control_type, producer_id=12, producer_epoch=3,
                                     coordinator_epoch=9, base_offset=40, timestamp=NOW))
    reader = READERS[client](data)
    assert reader.validate_crc()
    assert reader.is_control_batch and reader.is_transactional
    [record] = list(reader)
    assert record.offset == 40
    assert record.key == bytes([0, 0, 0, control_type])
    assert record.value == bytes([0, 0, 0, 0, 0, 9])
    if client == "kafka-python":
        assert record.type == control_type
        assert record.commit == (control_type == ControlType.COMMIT)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.none() | st.binary(max_size=300), min_size=1, max_size=20),
       deltas=st.lists(st.integers(-(2**31), 2**31), min_size=20, max_size=20),
       codec=st.sampled_from(CODECS))
def test_random_kcore_batches_decode_the_same_in_aiokafka(values, deltas, codec):
    records = [Record(offset=i, timestamp=NOW + deltas[i], key=b"%d" % i, value=v,
                      headers=[("i", b"%d" % i)]) for i, v in enumerate(values)]
    data = bytes(build_batch(records, codec=codec))
    reader = aiokafka_c.DefaultRecordBatch(data)
    assert reader.validate_crc()
    assert [client_record_tuple(r) for r in reader] == [kcore_record_tuple(r) for r in records]

"""Records of __transaction_state (kcore/coordinator/txn/records.py):
golden bytes of the key and the version 0 value kcore writes, round trips,
the flexible version 1 value that Kafka 3.8+ writes (with its tagged
PreviousProducerId, NextProducerId and ClientTransactionVersion), and bad
records. Layouts: TransactionLogKey.json / TransactionLogValue.json."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.coordinator.txn import records
from kcore.coordinator.txn.records import RecordFormatError, TransactionValue

VALUE = TransactionValue(producer_id=4242, producer_epoch=7, timeout_ms=60_000, state_id=1,
                         partitions=frozenset({("orders", 3), ("orders", 0), ("audit", 1)}),
                         last_update_ms=1_700_000_000_123, start_ms=1_700_000_000_000)


def test_key_golden_bytes():
    assert records.encode_key("app-1") == b"\x00\x00" + b"\x00\x05app-1"
    assert records.decode_key(b"\x00\x00\x00\x05app-1") == "app-1"


def test_value_v0_golden_bytes():
    expected = (struct.pack(">hqhib", 0, 4242, 7, 60_000, 1)
                + struct.pack(">i", 2)                                    # two topics, sorted
                + b"\x00\x05audit" + struct.pack(">ii", 1, 1)
                + b"\x00\x06orders" + struct.pack(">iii", 2, 0, 3)
                + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_000))
    assert records.encode_value(VALUE) == expected
    assert records.decode_value(expected) == VALUE


def test_value_without_partitions_round_trips():
    empty = TransactionValue(1, 0, 1000, 0, frozenset(), 5, -1)
    assert records.decode_value(records.encode_value(empty)) == empty


def encode_unsigned_varint(value: int) -> bytes:
    assert 0 <= value < 128  # one byte is all these records need
    return bytes([value])


def compact_string(text: str) -> bytes:
    data = text.encode()
    return encode_unsigned_varint(len(data) + 1) + data


def value_v1(partitions: bytes, tagged: bytes = b"\x00") -> bytes:
    return (struct.pack(">hqhib", 1, 4242, 7, 60_000, 4) + partitions
            + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_000) + tagged)


def test_value_v1_with_kafkas_tagged_fields_is_read():
    partitions = (encode_unsigned_varint(2)                          # one topic
                  + compact_string("orders") + encode_unsigned_varint(3) + struct.pack(">ii", 0, 3)
                  + b"\x00")                                         # the topic's tagged fields
    tagged = (encode_unsigned_varint(3)
              + b"\x00" + b"\x08" + struct.pack(">q", 4000)          # PreviousProducerId
              + b"\x01" + b"\x08" + struct.pack(">q", 4243)          # NextProducerId
              + b"\x02" + b"\x02" + struct.pack(">h", 2))            # ClientTransactionVersion
    value = records.decode_value(value_v1(partitions, tagged))
    assert value == TransactionValue(4242, 7, 60_000, 4, frozenset({("orders", 0), ("orders", 3)}),
                                     1_700_000_000_123, 1_700_000_000_000)


def test_value_v1_with_null_partitions_is_read():
    value = records.decode_value(value_v1(b"\x00"))
    assert value.partitions == frozenset() and value.state_id == 4


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x02" + bytes(40), b"\xff\xff" + bytes(40)],
                         ids=["empty", "short-version", "version-2", "version-negative"])
def test_unreadable_values_are_record_format_errors(data):
    with pytest.raises(RecordFormatError):
        records.decode_value(data)


@pytest.mark.parametrize("data", [b"\x00\x01\x00\x01t", b"\x00\x00\x00\x09short", b"\x00"])
def test_unreadable_keys_are_record_format_errors(data):
    with pytest.raises(RecordFormatError):
        records.decode_key(data)


def test_truncated_value_is_a_record_format_error():
    data = records.encode_value(VALUE)
    for cut in (3, 20, len(data) - 1):
        with pytest.raises(RecordFormatError):
            records.decode_value(data[:cut])


@given(st.builds(TransactionValue,
                 st.integers(0, 2**63 - 1), st.integers(0, 32767), st.integers(1, 2**31 - 1),
                 st.integers(0, 7),
                 st.frozensets(st.tuples(st.text(min_size=1, max_size=20), st.integers(0, 2**31 - 1)),
                               max_size=20),
                 st.integers(0, 2**62), st.integers(-1, 2**62)))
def test_value_round_trips(value):
    assert records.decode_value(records.encode_value(value)) == value


@pytest.mark.parametrize(("transactional_id", "partitions", "expected"), [
    # abs(Java String.hashCode) % partitions, as Kafka's TransactionStateManager.partitionFor.
    ("", 50, 0), ("a", 50, 97 % 50), ("txn-1", 50, 110810510 % 50), ("polygenelubricants", 50, 0)])
def test_partition_of_a_transactional_id_is_kafkas(transactional_id, partitions, expected):
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE, whose Utils.abs is 0.
    assert records.partition_for(transactional_id, partitions) == expected

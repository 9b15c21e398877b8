"""Primitive types: known encodings, round trips and failure modes."""
from __future__ import annotations

import io
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.old.types import UnsignedVarInt32, VarInt32, VarInt64

from kcore.protocol import ProtocolDecodeError, ProtocolEncodeError
from kcore.protocol.primitives import Reader, Writer, uvarint, varint, varlong


@pytest.mark.parametrize("value,encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_unsigned_varint_known_encodings(value, encoded):
    assert uvarint(value) == encoded
    assert Reader(encoded).unsigned_varint() == value


@pytest.mark.parametrize("value,encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"),
    (64, b"\x80\x01"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_zigzag_varint_known_encodings(value, encoded):
    assert varint(value) == encoded
    assert Reader(encoded).varint() == value


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_matches_kafka_python(value):
    assert uvarint(value) == UnsignedVarInt32.encode(value)
    assert Reader(uvarint(value)).unsigned_varint() == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_matches_kafka_python(value):
    assert varint(value) == VarInt32.encode(value)
    assert Reader(varint(value)).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_matches_kafka_python(value):
    assert varlong(value) == VarInt64.encode(value)
    assert VarInt64.decode(io.BytesIO(varlong(value))) == value
    assert Reader(varlong(value)).varlong() == value


def test_out_of_range_varints_are_refused():
    for encode, value in [(uvarint, -1), (uvarint, 2**32), (varint, 2**31), (varlong, -(2**63) - 1)]:
        with pytest.raises(ProtocolEncodeError):
            encode(value)


def test_overlong_and_truncated_varints_are_decode_errors():
    with pytest.raises(ProtocolDecodeError, match="longer than 5"):
        Reader(b"\x80\x80\x80\x80\x80\x01").unsigned_varint()
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\x80\x80").unsigned_varint()
    with pytest.raises(ProtocolDecodeError, match="longer than 10"):
        Reader(b"\x80" * 10 + b"\x01").varlong()


FIXED = [("int8", st.integers(-128, 127)), ("int16", st.integers(-(2**15), 2**15 - 1)),
         ("int32", st.integers(-(2**31), 2**31 - 1)), ("int64", st.integers(-(2**63), 2**63 - 1)),
         ("uint16", st.integers(0, 2**16 - 1)), ("uint32", st.integers(0, 2**32 - 1)),
         ("float64", st.floats(allow_nan=False)), ("boolean", st.booleans()), ("uuid", st.uuids())]


@given(st.lists(st.sampled_from(FIXED).flatmap(lambda kind: st.tuples(st.just(kind[0]), kind[1])), max_size=8))
def test_fixed_width_values_round_trip_through_writer_and_reader(items):
    writer = Writer()
    for kind, value in items:
        getattr(writer, kind)(value)
    reader = Reader(writer.getvalue())
    assert [getattr(reader, kind)() for kind, _ in items] == [value for _, value in items]
    assert reader.remaining == 0


@given(st.none() | st.text(max_size=40), st.booleans())
def test_strings_round_trip_in_classic_and_compact_forms(value, compact):
    writer = Writer()
    writer.string(value, compact=compact)
    assert Reader(writer.getvalue()).string(nullable=True, compact=compact) == value


@given(st.none() | st.binary(max_size=300), st.booleans())
def test_bytes_round_trip_in_classic_and_compact_forms(value, compact):
    writer = Writer()
    writer.bytes(value, compact=compact)
    assert Reader(writer.getvalue()).bytes(nullable=True, compact=compact) == value


@given(st.none() | st.lists(st.integers(-(2**31), 2**31 - 1), max_size=20), st.booleans())
def test_arrays_round_trip_in_classic_and_compact_forms(items, compact):
    writer = Writer()
    writer.array(items, Writer.int32, compact=compact)
    assert Reader(writer.getvalue()).array(Reader.int32, nullable=True, compact=compact) == items


def test_compact_forms_use_length_plus_one_and_zero_for_null():
    writer = Writer()
    writer.string("ab", compact=True)
    writer.string(None, compact=True)
    writer.array([], Writer.int8, compact=True)
    writer.bytes(b"", compact=True)
    assert writer.getvalue() == b"\x03ab" + b"\x00" + b"\x01" + b"\x01"


def test_non_nullable_reads_refuse_null():
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\xff\xff").string()
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\xff\xff\xff\xff").array(Reader.int8)


def test_invalid_utf8_and_truncation_are_decode_errors():
    with pytest.raises(ProtocolDecodeError, match="UTF-8"):
        Reader(b"\x00\x02\xff\xfe").string()
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\x00\x05abc").string()
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\x00\x00\x00\x10").array(Reader.int8)
    with pytest.raises(ProtocolDecodeError):
        Reader(b"\x00").int32()


def test_tagged_fields_are_skipped_by_the_reader():
    writer = Writer()
    writer.tagged_fields([(7, b"xyz"), (2, b"")])
    writer.int8(9)
    data = writer.getvalue()
    assert data == b"\x02" + b"\x02\x00" + b"\x07\x03xyz" + b"\x09"  # written in tag order
    reader = Reader(data)
    reader.skip_tagged_fields()
    assert reader.int8() == 9


class FileSlice:
    def __init__(self, size: int) -> None:
        self.size = size


def test_writer_records_splice_file_slices_and_large_buffers_into_chunks():
    file_slice, large = FileSlice(10_000), bytes(4096)
    writer = Writer()
    writer.int8(1)
    writer.records([b"head", file_slice, large])
    writer.int8(2)
    chunks = writer.chunks()
    assert chunks[0] == b"\x01" + (4 + 10_000 + 4096).to_bytes(4, "big") + b"head"
    assert chunks[1] is file_slice and chunks[2] is large and chunks[3] == b"\x02"
    with pytest.raises(ProtocolEncodeError):
        writer.getvalue()


def test_reader_records_are_views_of_the_buffer():
    data = b"\x00\x00\x00\x03abc\x00\x00\x00\x00\xff\xff\xff\xff"
    reader = Reader(data)
    first = reader.records()
    assert first.obj is data and first == b"abc"
    assert reader.records() == b"" and reader.records() is None


def test_records_chunks_must_be_buffers_or_sized():
    with pytest.raises(ProtocolEncodeError):
        Writer().records(object())
    with pytest.raises(ProtocolEncodeError):
        Writer().records(FileSlice(-1))


def test_uuid_reads_sixteen_bytes():
    value = uuid.uuid4()
    assert Reader(value.bytes).uuid() == value
    with pytest.raises(ProtocolDecodeError):
        Reader(value.bytes[:15]).uuid()

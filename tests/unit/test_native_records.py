"""records kernels against the pure-Python reference and published vectors."""
from __future__ import annotations

import struct

import crc32c as crc32c_package
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore._native import records as native
from kcore._native.twin import records as twin
from tests.support.batches import build_batch, encode_record

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
UINT64 = st.integers(0, (1 << 64) - 1)


# ------------------------------------------------------------------ CRC-32C

@pytest.mark.parametrize("data, expected", [
    (b"", 0),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),                    # RFC 3720 B.4
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
])
def test_crc32c_matches_published_vectors(data, expected):
    assert native.crc32c(data) == expected
    assert twin.crc32c(data) == expected


@given(st.binary(max_size=4096), st.integers(0, 0xFFFFFFFF))
def test_crc32c_matches_reference_and_crc32c_package(data, start):
    expected = crc32c_package.crc32c(data, start)
    assert native.crc32c(data, start) == expected
    assert twin.crc32c(data, start) == expected


@pytest.mark.parametrize("size", [12287, 12288, 12289, 3 * 12288 + 5, 65535, 65536, 1 << 20])
def test_crc32c_of_large_buffers_matches_package_across_stream_and_gil_thresholds(size):
    data = bytes((i * 131 + 7) & 0xFF for i in range(size))
    assert native.crc32c(data) == crc32c_package.crc32c(data)
    assert native.crc32c(memoryview(data)[1:]) == crc32c_package.crc32c(data[1:])


def test_crc32c_matches_package_at_every_length_around_the_folding_paths():
    data = bytes((i * 7 + 3) & 0xFF for i in range(1400))
    for length in range(0, 1400):
        for start in (0, 0x89ABCDEF):
            assert native.crc32c(data[:length], start) == crc32c_package.crc32c(data[:length], start)
    assert native.crc32c(memoryview(data)[3:1003]) == crc32c_package.crc32c(data[3:1003])


@given(st.binary(max_size=2048), st.integers(0, 2048))
def test_crc32c_continues_across_split_points(data, cut):
    cut = min(cut, len(data))
    assert native.crc32c(data[cut:], native.crc32c(data[:cut])) == native.crc32c(data)


# ------------------------------------------------------------- varint / zigzag

@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"),
    (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"), (-65, b"\x81\x01"),
    (2147483647, b"\xfe\xff\xff\xff\x0f"), (-2147483648, b"\xff\xff\xff\xff\x0f"),
    ((1 << 63) - 1, b"\xfe" + b"\xff" * 8 + b"\x01"),
    (-(1 << 63), b"\xff" * 9 + b"\x01"),
])
def test_varint_matches_spec_vectors(value, encoded):
    assert native.encode_varint(value) == encoded
    assert native.decode_varint(encoded) == (value, len(encoded))
    assert twin.encode_varint(value) == encoded


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
    (150, b"\x96\x01"), (300, b"\xac\x02"), ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
])
def test_uvarint_matches_protobuf_vectors(value, encoded):
    assert native.encode_uvarint(value) == encoded
    assert native.decode_uvarint(encoded) == (value, len(encoded))


@pytest.mark.parametrize("signed, unsigned", [
    (0, 0), (-1, 1), (1, 2), (-2, 3), (2147483647, 4294967294), (-2147483648, 4294967295),
])
def test_zigzag_matches_spec_vectors(signed, unsigned):
    assert native.zigzag_encode(signed) == unsigned
    assert native.zigzag_decode(unsigned) == signed


@given(INT64)
def test_zigzag_round_trips_and_matches_reference(value):
    encoded = native.zigzag_encode(value)
    assert encoded == twin.zigzag_encode(value)
    assert native.zigzag_decode(encoded) == value


@given(INT64, st.binary(max_size=4), st.binary(max_size=4))
def test_varint_round_trips_at_an_offset_and_matches_reference(value, prefix, suffix):
    encoded = native.encode_varint(value)
    assert encoded == twin.encode_varint(value)
    buf = prefix + encoded + suffix
    assert native.decode_varint(buf, len(prefix)) == (value, len(prefix) + len(encoded))
    assert twin.decode_varint(buf, len(prefix)) == (value, len(prefix) + len(encoded))


@given(UINT64)
def test_uvarint_round_trips_and_matches_reference(value):
    encoded = native.encode_uvarint(value)
    assert encoded == twin.encode_uvarint(value)
    assert native.decode_uvarint(bytearray(encoded)) == (value, len(encoded))


@given(st.binary(max_size=12), st.integers(0, 12))
def test_decode_agrees_with_reference_on_arbitrary_bytes(data, pos):
    for name in ("decode_varint", "decode_uvarint"):
        try:
            expected = getattr(twin, name)(data, pos)
        except ValueError as error:
            with pytest.raises(ValueError):
                getattr(native, name)(data, pos)
            assert "varint" in str(error)
        else:
            assert getattr(native, name)(data, pos) == expected


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
@pytest.mark.parametrize("data, message", [
    (b"", "truncated"), (b"\x80", "truncated"), (b"\xff\xff", "truncated"),
    (b"\xff" * 10 + b"\x01", "overlong"), (b"\xff" * 9 + b"\x02", "overlong"),
])
def test_decode_rejects_truncated_and_overlong_varints(module, data, message):
    with pytest.raises(ValueError, match=message):
        module.decode_uvarint(data)
    with pytest.raises(ValueError, match=message):
        module.decode_varint(data)


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
def test_encode_rejects_out_of_range_integers(module):
    with pytest.raises(ValueError):
        module.encode_varint(1 << 63)
    with pytest.raises(ValueError):
        module.encode_uvarint(-1)
    with pytest.raises(ValueError):
        module.encode_uvarint(1 << 64)


# ---------------------------------------------------------------- batch header

values_lists = st.lists(st.one_of(st.none(), st.binary(max_size=64)), min_size=1, max_size=8)


@st.composite
def batches(draw):
    values = draw(values_lists)
    return build_batch(
        values,
        base_offset=draw(st.integers(0, 1 << 40)),
        partition_leader_epoch=draw(st.integers(-1, 1 << 20)),
        base_timestamp=draw(st.integers(0, 1 << 42)),
        timestamp_deltas=draw(st.lists(st.integers(0, 1000), min_size=len(values), max_size=len(values))),
        producer_id=draw(st.integers(-1, 1 << 40)),
        producer_epoch=draw(st.integers(-1, 32767)),
        base_sequence=draw(st.integers(-1, 1 << 30)),
        attributes=draw(st.sampled_from([0, 0x10, 0x30])),
    )


@given(st.lists(batches(), min_size=1, max_size=5))
def test_validate_and_parse_match_reference_on_valid_batches(batch_list):
    buf = bytearray(b"".join(batch_list))
    infos = native.validate_batches(buf)
    assert infos == twin.validate_batches(buf)
    assert [info.position for info in infos] == [sum(map(len, batch_list[:i])) for i in range(len(batch_list))]
    for info in infos:
        assert native.parse_batch_header(buf, info.position) == twin.parse_batch_header(buf, info.position)


@given(st.lists(batches(), min_size=1, max_size=5), st.integers(0, 200))
def test_batch_infos_match_validate_and_reference_and_only_check_sizes(batch_list, cut):
    buf = bytearray(b"".join(batch_list))
    assert native.batch_infos(buf) == native.validate_batches(buf) == twin.batch_infos(buf)
    buf[-1] ^= 0xFF  # a CRC failure batch_infos does not look for
    assert native.batch_infos(buf) == twin.batch_infos(buf)
    torn = bytes(buf[:len(buf) - 1 - cut % (len(batch_list[-1]) - 1)])
    if torn:
        with pytest.raises(native.CorruptBatchError, match="size"):
            native.batch_infos(torn)
        with pytest.raises(twin.CorruptBatchError, match="size"):
            twin.batch_infos(torn)


@given(st.lists(batches(), min_size=1, max_size=5), st.integers(0, 1 << 50), st.integers(-1, 1 << 30))
def test_patch_batches_matches_reference_and_keeps_crc_valid(batch_list, base_offset, epoch):
    buf = bytearray(b"".join(batch_list))
    expected = bytearray(buf)
    next_offset = native.patch_batches(buf, base_offset, epoch)
    assert next_offset == twin.patch_batches(expected, base_offset, epoch)
    assert buf == expected
    offset = base_offset
    for info in native.validate_batches(buf):
        assert info.base_offset == offset and info.partition_leader_epoch == epoch
        offset = info.last_offset + 1
    assert next_offset == offset


@given(st.lists(batches(), min_size=1, max_size=3), st.data())
def test_any_flipped_byte_is_rejected_like_reference(batch_list, data):
    buf = bytearray(b"".join(batch_list))
    position = data.draw(st.integers(0, len(buf) - 1))
    buf[position] ^= data.draw(st.integers(1, 255))
    snapshot = bytes(buf)
    try:
        expected = twin.validate_batches(buf)
    except twin.CorruptBatchError as error:
        with pytest.raises(native.CorruptBatchError) as raised:
            native.validate_batches(buf)
        assert (raised.value.reason, raised.value.position) == (error.reason, error.position)
    else:
        # Only baseOffset and partitionLeaderEpoch lie outside the CRC.
        assert native.validate_batches(buf) == expected
        start = max(s for s in _starts(batch_list) if s <= position)
        assert position - start in (*range(0, 8), *range(12, 16))
    assert bytes(buf) == snapshot


def _starts(batch_list):
    return [sum(map(len, batch_list[:i])) for i in range(len(batch_list))]


def _bad(**overrides):
    return build_batch([b"x", b"y"], **overrides)


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
@pytest.mark.parametrize("buf, reason", [
    (_bad()[:60], "size"),
    (_bad()[:-1], "size"),
    (_bad() + b"\x00" * 11, "size"),
    (bytearray(struct.pack(">qi", 0, 48)) + bytes(49), "size"),
    (_bad(last_offset_delta=5), "count"),
    (_bad(records_count=3), "count"),
    (_bad(records_count=0, last_offset_delta=-1), "count"),
])
def test_validate_rejects_each_kind_of_bad_batch(module, buf, reason):
    with pytest.raises(module.CorruptBatchError) as raised:
        module.validate_batches(bytes(buf))
    assert raised.value.reason == reason
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
def test_validate_reports_magic_and_crc_failures_with_position(module):
    good = bytes(_bad())
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    wrong_crc = bytearray(good)
    wrong_crc[-1] ^= 1
    for tail, reason in ((wrong_magic, "magic"), (wrong_crc, "crc")):
        with pytest.raises(module.CorruptBatchError) as raised:
            module.validate_batches(good + tail)
        assert (raised.value.reason, raised.value.position) == (reason, len(good))


def test_validate_without_count_check_accepts_compacted_batches():
    compacted = bytes(_bad(last_offset_delta=9))
    assert native.validate_batches(compacted, check_count=False)[0].last_offset_delta == 9
    assert twin.validate_batches(compacted, check_count=False)[0].last_offset_delta == 9


def test_validate_returns_empty_list_for_empty_buffer():
    assert native.validate_batches(b"") == []


def test_patch_checks_every_size_before_writing():
    buf = bytearray(bytes(_bad()) + bytes(_bad())[:70])
    before = bytes(buf)
    with pytest.raises(native.CorruptBatchError) as raised:
        native.patch_batches(buf, 10, 3)
    assert raised.value.reason == "size" and raised.value.position == len(_bad())
    assert bytes(buf) == before


def test_patch_refuses_read_only_buffers():
    with pytest.raises(BufferError):
        native.patch_batches(bytes(_bad()), 0, 0)


def test_large_batch_is_validated_with_gil_released_path():
    big = build_batch([bytes(200_000), bytes(100)])
    assert native.validate_batches(big) == twin.validate_batches(big)
    big[-1] ^= 1
    with pytest.raises(native.CorruptBatchError, match="crc"):
        native.validate_batches(big)


@given(st.lists(batches(), min_size=1, max_size=3), st.integers(0, 1 << 45))
def test_stamp_log_append_time_matches_reference_and_keeps_crc_valid(batch_list, timestamp):
    buf = bytearray(b"".join(batch_list))
    expected = bytearray(buf)
    assert native.stamp_log_append_time(buf, timestamp) == twin.stamp_log_append_time(expected, timestamp)
    assert buf == expected
    for info in native.validate_batches(buf):
        assert info.timestamp_type == 1 and info.max_timestamp == timestamp


def test_batch_from_kafka_python_builder_validates_and_matches_reference_builder():
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=None, value=b"v%d" % i, headers=[])
    client = bytes(builder.build())
    ours = build_batch([b"v0", b"v1", b"v2"], base_timestamp=1000, timestamp_deltas=[0, 1, 2])
    assert client == bytes(ours)
    info = native.validate_batches(client)[0]
    assert (info.position, info.size_in_bytes, info.last_offset_delta, info.records_count) == (0, len(client), 2, 3)


@given(st.lists(batches(), min_size=1, max_size=3))
def test_header_properties_match_twin(batch_list):
    buf = b"".join(batch_list)
    for native_header, twin_header in zip(native.batch_infos(buf), twin.batch_infos(buf), strict=True):
        for name in ("size_in_bytes", "last_offset", "compression_codec", "timestamp_type",
                     "is_transactional", "is_control", "delete_horizon_ms"):
            assert getattr(native_header, name) == getattr(twin_header, name), name


# ------------------------------------------------------------------- records

keys_and_values = st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=200)),
                                     st.one_of(st.none(), st.binary(max_size=200))),
                           min_size=1, max_size=8)


@given(keys_and_values, st.integers(0, 1 << 20))
def test_walk_records_finds_every_key_and_value_like_twin(pairs, first_delta):
    section = b"".join(encode_record(first_delta + i, 3 * i, key, value)
                       for i, (key, value) in enumerate(pairs))
    spans = native.walk_records(section)
    assert spans == twin.walk_records(section)
    for i, (span, (key, value)) in enumerate(zip(spans, pairs, strict=True)):
        assert (span.offset_delta, span.timestamp_delta) == (first_delta + i, 3 * i)
        assert span.key_length == (-1 if key is None else len(key))
        assert span.value_length == (-1 if value is None else len(value))
        if key is not None:
            assert section[span.key_position:span.key_position + span.key_length] == key
    assert native.has_null_key(section) == twin.has_null_key(section) \
        == any(key is None for key, _ in pairs)


@given(st.binary(max_size=64))
def test_walk_records_and_has_null_key_agree_with_twin_on_arbitrary_bytes(data):
    assert native.has_null_key(data) == twin.has_null_key(data)
    try:
        expected = twin.walk_records(data)
    except ValueError:
        with pytest.raises(ValueError, match="malformed record"):
            native.walk_records(data)
        assert native.has_null_key(data)
    else:
        assert native.walk_records(data) == expected


@given(keys_and_values, st.integers(1, 9))
def test_walk_records_in_windows_finds_the_same_spans_and_count_records_counts_them(pairs, window):
    section = b"".join(encode_record(i, i, key, value) for i, (key, value) in enumerate(pairs))
    whole = native.walk_records(section)
    walked, position = [], 0
    while chunk := native.walk_records(section, position, window):
        assert len(chunk) <= window and chunk == twin.walk_records(section, position, window)
        walked += chunk
        position = chunk[-1].end
    assert walked == whole
    assert native.count_records(section) == twin.count_records(section) == len(pairs)


@given(st.binary(max_size=64))
def test_count_records_agrees_with_the_twin_on_arbitrary_bytes(data):
    try:
        expected = twin.count_records(data)
    except ValueError:
        with pytest.raises(ValueError, match="malformed record"):
            native.count_records(data)
    else:
        assert native.count_records(data) == expected


def test_walk_records_refuses_a_position_outside_the_section():
    section = encode_record(0, 0, b"k", b"v")
    assert native.walk_records(section, len(section)) == []
    for position in (-1, len(section) + 1):
        with pytest.raises(ValueError, match="outside"):
            native.walk_records(section, position)
        with pytest.raises(ValueError, match="outside"):
            twin.walk_records(section, position)


timestamp_deltas = st.lists(st.integers(-(1 << 40), 1 << 40), min_size=1, max_size=8)


@given(timestamp_deltas, st.integers(-1, 1 << 45), st.integers(0, 1 << 41), st.integers(0, 1 << 41))
def test_timestamps_within_checks_every_record_like_twin(deltas, base, below, above):
    section = b"".join(encode_record(i, delta, b"k", b"v") for i, delta in enumerate(deltas))
    earliest, latest = base - below, base + above
    expected = all(base + d == -1 or earliest <= base + d <= latest for d in deltas)
    assert native.timestamps_within(section, base, earliest, latest) == expected
    assert twin.timestamps_within(section, base, earliest, latest) == expected


def test_timestamps_within_skips_records_without_a_timestamp():
    section = encode_record(0, 0, b"k", b"v") + encode_record(1, 0, b"k", b"v")
    assert native.timestamps_within(section, -1, 1000, 2000)
    assert not native.timestamps_within(section, 999, 1000, 2000)


@given(st.binary(max_size=64), INT64)
def test_timestamps_within_agrees_with_twin_on_arbitrary_bytes(data, base):
    assert native.timestamps_within(data, base, -(1 << 40), 1 << 40) \
        == twin.timestamps_within(data, base, -(1 << 40), 1 << 40)


def test_a_record_running_past_its_section_is_malformed():
    section = encode_record(0, 0, b"key", b"value")
    for cut in range(1, len(section)):
        with pytest.raises(ValueError, match="malformed record"):
            native.walk_records(section[:cut])
        assert native.has_null_key(section[:cut])
        assert not native.timestamps_within(section[:cut], 0, -(1 << 62), 1 << 62)

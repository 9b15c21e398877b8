"""__consumer_offsets record formats (golden bytes from Kafka's layouts) and
the group -> partition mapping (Java String.hashCode)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group import records as r
from kcore.protocol import encode_struct


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_key_is_version_1_group_topic_partition():
    assert r.encode_offset_key("g", "t", 3) == bytes.fromhex("0001" "000167" "000174" "00000003")


def test_group_metadata_key_is_version_2_group():
    assert r.encode_group_key("grp") == bytes.fromhex("0002" "0003677270")


@given(st.text(max_size=30), st.text(max_size=30), st.integers(0, 2**31 - 1),
       st.integers(-1, 2**62), st.integers(-1, 2**31 - 1), st.text(max_size=50),
       st.integers(0, 2**62), st.sampled_from([-1, 5_000]))
def test_hand_packed_offset_records_match_the_schema_encoding(group, topic, partition, offset_value,
                                                              epoch, metadata, timestamp, expire):
    assert r.encode_offset_key(group, topic, partition) == b"\x00\x01" + encode_struct(
        r.OFFSET_COMMIT_KEY, 0, {"group": group, "topic": topic, "partition": partition})
    value = r.OffsetValue(offset_value, epoch, metadata, timestamp, expire)
    version = 1 if expire >= 0 else 3
    assert r.encode_offset_value(value) == struct.pack(">h", version) + encode_struct(
        r.OFFSET_COMMIT_VALUE, version, value)
    assert r.decode_offset_value(r.encode_offset_value(value)) == (
        value if expire < 0 else r.OffsetValue(offset_value, -1, metadata, timestamp, expire))
    assert r.decode_key(r.encode_offset_key(group, topic, partition)) == r.OffsetKey(group, topic, partition)


@given(st.binary(max_size=40))
def test_garbage_keys_and_values_are_format_errors_never_crashes(data):
    for decode in (r.decode_key, r.decode_offset_value, r.decode_group_value):
        try:
            decode(b"\x00\x01" + data)
            decode(b"\x00\x03" + data)
        except r.RecordFormatError:
            pass


def test_offset_records_with_trailing_bytes_are_format_errors():
    with pytest.raises(r.RecordFormatError):
        r.decode_key(r.encode_offset_key("g", "t", 1) + b"x")
    with pytest.raises(r.RecordFormatError):
        r.decode_offset_value(r.encode_offset_value(r.OffsetValue(1, 0, "", 2)) + b"x")


def test_keys_decode_to_their_kind():
    assert r.decode_key(r.encode_offset_key("g", "t", 3)) == r.OffsetKey("g", "t", 3)
    assert r.decode_key(r.encode_group_key("grp")) == r.GroupKey("grp")
    legacy = b"\x00\x00" + _string("g") + _string("t") + struct.pack(">i", 7)
    assert r.decode_key(legacy) == r.OffsetKey("g", "t", 7)


def test_unknown_key_version_is_a_format_error():
    with pytest.raises(r.RecordFormatError):
        r.decode_key(b"\x00\x09" + _string("g"))
    with pytest.raises(r.RecordFormatError):
        r.decode_key(b"\x00")


def test_offset_value_without_expiry_is_version_3():
    value = r.OffsetValue(offset=5, leader_epoch=2, metadata="meta", commit_timestamp=123)
    expected = (struct.pack(">hqi", 3, 5, 2) + _string("meta") + struct.pack(">q", 123))
    assert r.encode_offset_value(value) == expected
    assert r.decode_offset_value(expected) == value


def test_offset_value_with_expiry_is_version_1_without_leader_epoch():
    value = r.OffsetValue(offset=5, leader_epoch=9, metadata="", commit_timestamp=123,
                          expire_timestamp=456)
    expected = struct.pack(">hq", 1, 5) + _string("") + struct.pack(">qq", 123, 456)
    assert r.encode_offset_value(value) == expected
    assert r.decode_offset_value(expected) == r.OffsetValue(5, -1, "", 123, 456)


def test_flexible_offset_value_version_4_is_read():
    # compact string: unsigned varint length + 1; empty tagged-field section.
    data = struct.pack(">hqi", 4, 77, 3) + bytes([3]) + b"ab" + struct.pack(">q", 999) + b"\x00"
    assert r.decode_offset_value(data) == r.OffsetValue(77, 3, "ab", 999)


def test_group_value_version_3_layout():
    value = r.GroupValue("consumer", 3, "range", "m1", 77, [
        r.MemberValue("m1", None, "c", "/h", 1000, 2000, b"sub", b"asg")])
    expected = (struct.pack(">h", 3) + _string("consumer") + struct.pack(">i", 3)
                + _string("range") + _string("m1") + struct.pack(">q", 77)
                + struct.pack(">i", 1) + _string("m1") + struct.pack(">h", -1)
                + _string("c") + _string("/h") + struct.pack(">ii", 1000, 2000)
                + _bytes(b"sub") + _bytes(b"asg"))
    assert r.encode_group_value(value) == expected
    assert r.decode_group_value(expected) == value


def test_group_value_version_0_takes_session_timeout_as_rebalance_timeout():
    data = (struct.pack(">h", 0) + _string("consumer") + struct.pack(">i", 1) + _string("range")
            + _string("m1") + struct.pack(">i", 1) + _string("m1") + _string("c") + _string("/h")
            + struct.pack(">i", 3000) + _bytes(b"s") + _bytes(b"a"))
    decoded = r.decode_group_value(data)
    assert decoded.members == [r.MemberValue("m1", None, "c", "/h", 3000, 3000, b"s", b"a")]
    assert decoded.current_state_timestamp == -1


def test_empty_group_value_has_null_protocol_and_leader():
    value = r.GroupValue("consumer", 2, None, None, 5, [])
    data = r.encode_group_value(value)
    assert data == (struct.pack(">h", 3) + _string("consumer") + struct.pack(">i", 2)
                    + struct.pack(">hh", -1, -1) + struct.pack(">qi", 5, 0))
    assert r.decode_group_value(data) == value


def test_truncated_value_is_a_format_error():
    with pytest.raises(r.RecordFormatError):
        r.decode_offset_value(struct.pack(">hq", 3, 5))


@pytest.mark.parametrize("text,expected", [
    ("", 0),
    ("hello", 99162322),
    ("Aa", 2112),
    ("BB", 2112),
    ("polygenelubricants", -2**31),       # hashCode == Integer.MIN_VALUE
    ("\U0001F600", 0xD83D * 31 + 0xDE00),  # one code point, two UTF-16 units
])
def test_java_string_hash_known_values(text, expected):
    assert r.java_string_hash(text) == expected


@given(st.text(max_size=40))
def test_java_string_hash_is_the_int32_polynomial_over_utf16_units(text):
    units = struct.unpack(f">{len(text.encode('utf-16-be', 'surrogatepass')) // 2}H",
                          text.encode("utf-16-be", "surrogatepass"))
    total = sum(unit * pow(31, len(units) - 1 - i, 2**32) for i, unit in enumerate(units)) % 2**32
    signed = total - 2**32 if total >= 2**31 else total
    assert r.java_string_hash(text) == signed


def test_partition_for_maps_min_value_to_zero_like_kafka_utils_abs():
    assert r.partition_for("polygenelubricants", 50) == 0


@given(st.text(max_size=40), st.integers(min_value=1, max_value=200))
def test_partition_for_is_abs_hash_modulo(text, partitions):
    hashed = r.java_string_hash(text)
    assert r.partition_for(text, partitions) == (0 if hashed == -2**31 else abs(hashed)) % partitions


def test_consumer_subscription_topics_read_from_every_version():
    v0 = struct.pack(">hi", 0, 2) + _string("a") + _string("b") + struct.pack(">i", -1)
    v1 = struct.pack(">hi", 1, 1) + _string("x") + struct.pack(">i", -1) + struct.pack(">i", 0)
    assert consumer_protocol.subscribed_topics(v0) == {"a", "b"}
    assert consumer_protocol.subscribed_topics(v1) == {"x"}
    assert consumer_protocol.subscribed_topics(b"\x00\x00\x00\x00\x00\x05\x00") is None
    assert consumer_protocol.subscribed_topics(b"junk") is None

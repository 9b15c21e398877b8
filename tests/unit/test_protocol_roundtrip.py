"""Round trips of every request and response schema at every served version.

Values drawn from the schema itself (test_protocol_strategies) must survive
encode -> decode unchanged, and re-encoding must reproduce the same bytes
whatever form the value takes: dict, generated data object or plain object.
At flexible versions, tagged fields the schema does not know (a newer peer's)
are skipped.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings

from kcore.protocol import (
    RequestHeader,
    decode_request,
    decode_response,
    decode_struct,
    encode_request,
    encode_response,
    encode_struct,
    request_header_version,
    to_dict,
)
from kcore.protocol.schema import Field, Struct
from tests.support.protocol_strategies import all_message_versions, normalize, values

CASES = all_message_versions()
ROUND_TRIP = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A tagged-field section of two unknown fields: count 2; tag 0, 1 byte; tag 9, 7 bytes.
UNKNOWN_TAGS = b"\x02" + b"\x00\x01\x02" + b"\x09\x07unknown"


def as_plain_objects(schema: Struct, version: int, value: dict) -> SimpleNamespace:
    """The value as attribute objects of no particular class, present fields only."""
    attributes = {}
    for field in schema.fields:
        if field.name not in value:
            continue
        item = value[field.name]
        if item is not None and field.struct is not None:
            if field.kind == "array":
                item = [as_plain_objects(field.struct, version, element) for element in item]
            else:
                item = as_plain_objects(field.struct, version, item)
        attributes[field.name] = item
    return SimpleNamespace(**attributes)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_values_survive_encode_and_decode_in_every_form(case):
    _id, schema, version = case

    @ROUND_TRIP
    @given(values(schema, version))
    def check(value):
        encoded = encode_struct(schema, version, value)
        decoded = decode_struct(schema, version, encoded)
        assert to_dict(decoded) == normalize(schema, version, value)
        assert encode_struct(schema, version, decoded) == encoded
        assert encode_struct(schema, version, schema.data_class(**value)) == encoded
        assert encode_struct(schema, version, as_plain_objects(schema, version, value)) == encoded
        if schema.is_flexible(version) and not any(field.tagged(version) for field in schema.fields):
            assert encoded.endswith(b"\x00")  # the body's empty tagged-field section
            with_tags = encoded[:-1] + UNKNOWN_TAGS
            assert to_dict(decode_struct(schema, version, with_tags)) == normalize(schema, version, value)

    check()


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_whole_frames_round_trip_with_their_headers(case):
    _id, schema, version = case
    is_request = schema.name.endswith("Request")

    @ROUND_TRIP
    @given(values(schema, version))
    def check(value):
        if is_request:
            frame = encode_request(schema.api_key, version, 1234, "client-1", value)
            request = decode_request(memoryview(frame)[4:])
            # Request header v0 (ControlledShutdown v0) has no client id.
            client_id = None if request_header_version(schema.api_key, version) == 0 else "client-1"
            assert request.header == RequestHeader(schema.api_key, version, 1234, client_id)
            body = request.body
        else:
            chunks = encode_response(RequestHeader(schema.api_key, version, 1234, None), value)
            frame = b"".join(bytes(chunk) for chunk in chunks)
            correlation_id, body = decode_response(schema.api_key, version, frame[4:])
            assert correlation_id == 1234
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        assert to_dict(body) == normalize(schema, version, value)

    check()


def test_standalone_data_schemas_use_their_own_flexible_versions():
    # Shaped like Kafka's OffsetCommitValue (a __consumer_offsets record value).
    offset_commit_value = Struct("OffsetCommitValue", [
        Field("offset", "int64", "0+"),
        Field("leader_epoch", "int32", "3+", default=-1),
        Field("metadata", "string", "0+"),
        Field("commit_timestamp", "int64", "0+"),
        Field("expire_timestamp", "int64", "1", default=-1),
    ], flexible="4+")
    value = {"offset": 42, "metadata": "m", "commit_timestamp": 7}
    v1 = encode_struct(offset_commit_value, 1, value)
    assert v1 == (42).to_bytes(8, "big") + b"\x00\x01m" + (7).to_bytes(8, "big") + b"\xff" * 8
    v4 = encode_struct(offset_commit_value, 4, value)
    assert v4 == (42).to_bytes(8, "big") + b"\xff" * 4 + b"\x02m" + (7).to_bytes(8, "big") + b"\x00"
    decoded = decode_struct(offset_commit_value, 4, v4)
    assert (decoded.offset, decoded.leader_epoch, decoded.expire_timestamp) == (42, -1, -1)


def test_a_nullable_tagged_struct_is_written_whenever_it_is_given():
    # Shaped like the classic member metadata of Kafka's
    # ConsumerGroupMemberMetadataValue: tag 0, nullable, default null.
    schema = Struct("MemberValue", [
        Field("client_id", "string", "0+"),
        Field("classic", "Classic", "0+", nullable="0+", default=None, tag=0, tagged="0+", fields=[
            Field("session_timeout_ms", "int32", "0+", default=-1),
        ]),
    ], flexible="0+")
    absent = encode_struct(schema, 0, {"client_id": "c"})
    assert absent == encode_struct(schema, 0, {"client_id": "c", "classic": None}) == b"\x02c\x00"
    # Given at its defaults it still differs from null: written (tag 0, 6
    # bytes: the presence byte 1, the int32 and its own empty tag section).
    given_defaults = encode_struct(schema, 0, {"client_id": "c", "classic": {}})
    assert given_defaults == b"\x02c" + b"\x01\x00\x06" + b"\x01\xff\xff\xff\xff\x00"
    as_object = SimpleNamespace(client_id="c", classic=SimpleNamespace(session_timeout_ms=-1))
    assert encode_struct(schema, 0, as_object) == given_defaults
    assert decode_struct(schema, 0, given_defaults).classic.session_timeout_ms == -1
    assert decode_struct(schema, 0, absent).classic is None

"""Bounded fuzz of decode_request: garbage never escapes as an unexpected exception.

Only the three documented exceptions may come out of decode_request:
UnknownApiKeyError, UnsupportedVersionError (both carrying the header) and
ProtocolDecodeError. Inputs: random bytes, random bodies behind valid
headers of every served api and version, and valid frames of every served
message mutated by byte flips, truncation, insertion and deletion.
"""
from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from kcore.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ProtocolDecodeError,
    Request,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    encode_request,
)
from kcore.protocol.header import request_header_version
from tests.support.protocol_strategies import all_message_versions, values

DOCUMENTED = (UnknownApiKeyError, UnsupportedVersionError, ProtocolDecodeError)
UNSERVED = next(int(key) for key in ApiKey if key not in SUPPORTED_VERSIONS)
REQUEST_CASES = [case for case in all_message_versions() if case[1].name.endswith("Request")]


def decode_or_documented_error(frame: bytes) -> Request | Exception:
    try:
        return decode_request(memoryview(frame))
    except DOCUMENTED as exc:
        return exc


@given(st.binary(max_size=300))
def test_random_bytes_only_raise_documented_errors(frame):
    decode_or_documented_error(frame)


@st.composite
def header_then_garbage(draw):
    key = draw(st.sampled_from([int(key) for key in SUPPORTED_VERSIONS] + [UNSERVED, 99, 32767]))
    low, high = SUPPORTED_VERSIONS.get(key, (0, 0))
    version = draw(st.integers(low - 1, high + 1))
    client_id = draw(st.none() | st.text(max_size=8))
    data = b"" if client_id is None else client_id.encode()
    header = struct.pack(">hhih", key, version, 5, -1 if client_id is None else len(data)) + data
    if request_header_version(key, version) == 2:
        header += b"\x00"
    return header + draw(st.binary(max_size=120))


@given(header_then_garbage())
def test_random_bodies_behind_valid_headers_only_raise_documented_errors(frame):
    result = decode_or_documented_error(frame)
    if isinstance(result, (UnknownApiKeyError, UnsupportedVersionError)):
        assert result.header.correlation_id == 5


@st.composite
def mutated_valid_frames(draw):
    _id, schema, version = draw(st.sampled_from(REQUEST_CASES))
    frame = bytearray(encode_request(schema.api_key, version, 9, "fuzz", draw(values(schema, version)))[4:])
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        position = draw(st.integers(0, max(0, len(frame) - 1)))
        if operation == "flip" and frame:
            frame[position] = draw(st.integers(0, 255))
        elif operation == "truncate":
            del frame[position:]
        elif operation == "insert":
            frame[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif frame:
            del frame[position:position + draw(st.integers(1, 8))]
    return bytes(frame)


@given(mutated_valid_frames())
def test_mutated_valid_frames_only_raise_documented_errors(frame):
    decode_or_documented_error(frame)


def test_huge_array_counts_fail_fast_without_allocating():
    header = struct.pack(">hhih", 0, 3, 1, -1)                      # Produce v3, null client id
    body = struct.pack(">hhii", -1, 1, 1000, 0x7FFFFFFF)           # 2**31 - 1 topics, no bytes left
    result = decode_or_documented_error(header + body)
    assert isinstance(result, ProtocolDecodeError) and "topic_data" in str(result)

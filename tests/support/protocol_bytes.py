"""Kafka wire primitives written by hand, for golden-byte tests."""
from __future__ import annotations

import struct


def i8(value: int) -> bytes:
    return struct.pack(">b", value)


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def i64(value: int) -> bytes:
    return struct.pack(">q", value)


def string(value: str) -> bytes:
    return i16(len(value)) + value.encode()


def compact_string(value: str) -> bytes:
    return bytes([len(value) + 1]) + value.encode()


def framed(*parts: bytes) -> bytes:
    body = b"".join(parts)
    return i32(len(body)) + body


NULL_STRING = b"\xff\xff"


NULL_ARRAY = b"\xff\xff\xff\xff"


NO_TAGS = b"\x00"


def request_header_v1(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    return i16(api_key) + i16(version) + i32(correlation_id) + string(client_id)

"""Request and response headers (Kafka RequestHeader.json / ResponseHeader.json).

Request header, after the 4-byte frame size::

    v0  request_api_key i16 | request_api_version i16 | correlation_id i32
    v1  v0 + client_id nullable string (int16 length)
    v2  v1 + tagged fields; client_id keeps its int16 length

Response header::

    v0  correlation_id i32
    v1  v0 + tagged fields

A request uses header v2 when its api version is flexible, v0 for
ControlledShutdown v0 (Kafka's one request without a client id) and v1
otherwise. A response
uses header v1 when flexible, except ApiVersions, whose response header is
always v0 so a client can read it before knowing the broker's versions
(KIP-511).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.exceptions import ProtocolDecodeError
from kcore.protocol.messages import REQUESTS
from kcore.protocol.primitives import INT16, INT32, skip_tagged_fields

_HEADER_V0 = struct.Struct(">hhi")  # api key, api version, correlation id
_FIXED_PART = struct.Struct(">hhih")  # header v0 + client id length


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


# First flexible version of each served api key (Kafka's flexibleVersions "N+").
_FLEXIBLE_FROM: dict[int, int] = {
    key: schema.flexible_versions[0] for key, schema in REQUESTS.items() if schema.flexible_versions is not None
}
_NEVER = 1 << 16


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if api_version >= _FLEXIBLE_FROM.get(api_key, _NEVER) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if request_header_version(api_key, api_version) == 2 else 0


def read_request_header(frame: memoryview) -> tuple[RequestHeader, int]:
    """Parses the header at the start of ``frame`` (the bytes after the size prefix).

    Returns the header and the offset of the body. Unknown api keys are read
    as header v1 (no tagged fields). Raises ProtocolDecodeError when truncated.
    """
    try:
        api_key, api_version, correlation_id = _HEADER_V0.unpack_from(frame, 0)
    except struct.error:
        raise ProtocolDecodeError(f"truncated request header ({len(frame)} bytes)") from None
    version = request_header_version(api_key, api_version)
    if version == 0:
        return RequestHeader(api_key, api_version, correlation_id, None), _HEADER_V0.size
    try:
        (length,) = INT16.unpack_from(frame, _HEADER_V0.size)
    except struct.error:
        raise ProtocolDecodeError("truncated client id in request header") from None
    pos = _FIXED_PART.size
    if length < 0:
        client_id = None
    else:
        end = pos + length
        if end > len(frame):
            raise ProtocolDecodeError("truncated client id in request header")
        # Informational only; a client id that is not UTF-8 should not cost the request.
        client_id = str(frame[pos:end], "utf-8", "replace")
        pos = end
    if version == 2:
        try:
            pos = skip_tagged_fields(frame, pos, len(frame))
        except (IndexError, struct.error):
            raise ProtocolDecodeError("truncated tagged fields in request header") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def write_request_header(out: bytearray, header: RequestHeader) -> None:
    version = request_header_version(header.api_key, header.api_version)
    if version == 0:
        out += _HEADER_V0.pack(header.api_key, header.api_version, header.correlation_id)
        return
    client_id = header.client_id
    data = b"" if client_id is None else client_id.encode("utf-8")
    out += _FIXED_PART.pack(header.api_key, header.api_version, header.correlation_id,
                            -1 if client_id is None else len(data))
    out += data
    if version == 2:
        out += b"\x00"


def write_response_header(out: bytearray, api_key: int, api_version: int, correlation_id: int) -> None:
    out += INT32.pack(correlation_id)
    if response_header_version(api_key, api_version) == 1:
        out += b"\x00"


def read_response_header(frame: memoryview, api_key: int, api_version: int) -> tuple[int, int]:
    """(correlation_id, body offset) of a response frame without its size prefix."""
    try:
        (correlation_id,) = INT32.unpack_from(frame, 0)
        pos = 4
        if response_header_version(api_key, api_version) == 1:
            pos = skip_tagged_fields(frame, pos, len(frame))
    except (IndexError, struct.error):
        raise ProtocolDecodeError("truncated response header") from None
    return correlation_id, pos

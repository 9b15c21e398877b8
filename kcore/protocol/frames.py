"""Whole request and response frames: header plus body, for every served API.

Frame layout (Kafka protocol guide, "Requests and Responses")::

    size i32 (bytes after it) | header (see header.py) | body (schema of the api key and version)

``decode_request`` takes a frame *without* its size prefix (the server's
framing strips it) and never copies record bytes: Produce records come back
as memoryview slices of the frame, so they keep the frame's buffer alive and
see any later write to it (do not reuse a receive buffer for the next
frame while a request decoded from it is still in use).
``encode_response`` returns the frame *with* its size prefix as a list of
chunks: bytes objects plus untouched records chunks (memoryviews, file
slices) for writev/sendfile. A body may come encoded already
(``encode_body``): a handler that answers the same request many times
(Metadata of 10,000 partitions) encodes it once.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kcore.protocol.codec import DECODE_FAILURES, ENCODE_FAILURES
from kcore.protocol.decoder import struct_decoder
from kcore.protocol.encoder import struct_encoder
from kcore.protocol.errors import ErrorCode
from kcore.protocol.exceptions import (
    ProtocolDecodeError,
    ProtocolEncodeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kcore.protocol.header import (
    RequestHeader,
    read_request_header,
    read_response_header,
    write_request_header,
    write_response_header,
)
from kcore.protocol.messages import REQUESTS, RESPONSES
from kcore.protocol.primitives import INT32, assemble, flatten

_SUPPORTED: dict[int, tuple[int, int]] = {int(key): span for key, span in SUPPORTED_VERSIONS.items()}
_request_decoders: dict[tuple[int, int], Callable] = {}
_response_encoders: dict[tuple[int, int], Callable] = {}


class Request:
    """A decoded request: its header and body (the schema's data object).

    ``trailing_bytes`` counts the bytes after the body's last field, which
    Kafka's RequestContext.parseRequest never looks at: librdkafka 2.16's
    AlterUserScramCredentials v0 writes its top-level tagged fields twice,
    one byte too many, and Kafka answers it. The server counts them.
    """

    __slots__ = ("header", "body", "trailing_bytes")

    def __init__(self, header: RequestHeader, body: Any, trailing_bytes: int = 0) -> None:
        self.header = header
        self.body = body
        self.trailing_bytes = trailing_bytes

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    def __repr__(self) -> str:
        return f"Request({self.header!r}, {self.body!r})"


def supported_versions() -> dict[ApiKey, tuple[int, int]]:
    """The (min, max) version of every served api key, in key order (ApiVersions)."""
    return dict(SUPPORTED_VERSIONS)


def is_supported(api_key: int, api_version: int) -> bool:
    span = _SUPPORTED.get(api_key)
    return span is not None and span[0] <= api_version <= span[1]


def _request_decoder(api_key: int, api_version: int) -> Callable:
    schema = REQUESTS[api_key]
    decoder = struct_decoder(schema, api_version, schema.is_flexible(api_version))
    _request_decoders[(api_key, api_version)] = decoder
    return decoder


def decode_request(frame: Any) -> Request:
    """Decodes a request frame (without the size prefix).

    Raises UnknownApiKeyError or UnsupportedVersionError (both with the
    parsed header) and ProtocolDecodeError for malformed frames; nothing else.
    """
    if type(frame) is not memoryview:
        frame = memoryview(frame)
    header, pos = read_request_header(frame)
    decoder = _request_decoders.get((header.api_key, header.api_version))
    if decoder is None:
        span = _SUPPORTED.get(header.api_key)
        if span is None:
            raise UnknownApiKeyError(header)
        if not span[0] <= header.api_version <= span[1]:
            raise UnsupportedVersionError(header)
        decoder = _request_decoder(header.api_key, header.api_version)
    end = len(frame)
    try:
        body, pos = decoder(frame, pos, end)
    except ProtocolDecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise ProtocolDecodeError(
            f"{REQUESTS[header.api_key].name} v{header.api_version}: {type(exc).__name__}: {exc}") from None
    return Request(header, body, end - pos)


def _response_encoder(api_key: int, api_version: int) -> Callable:
    if not is_supported(api_key, api_version):
        raise ProtocolEncodeError(f"no response schema for api key {api_key} v{api_version}")
    schema = RESPONSES[api_key]
    encoder = struct_encoder(schema, api_version, schema.is_flexible(api_version))
    _response_encoders[(api_key, api_version)] = encoder
    return encoder


class EncodedBody(bytes):
    """A response body encoded by ``encode_body`` for one (api key,
    version); only records-free bodies (nothing to splice)."""


def encode_body(api_key: int, api_version: int, body: Any) -> EncodedBody:
    out = bytearray()
    splices: list = []
    _encode(api_key, api_version, body, out, splices)
    if splices:
        raise ProtocolEncodeError(f"{RESPONSES[api_key].name}: a body with records cannot be "
                                  f"encoded ahead")
    return EncodedBody(out)


def _encode(api_key: int, api_version: int, body: Any, out: bytearray, splices: list) -> None:
    encoder = _response_encoders.get((api_key, api_version)) or _response_encoder(api_key, api_version)
    try:
        encoder(body, out, splices)
    except ProtocolEncodeError:
        raise
    except ENCODE_FAILURES as exc:
        raise ProtocolEncodeError(
            f"{RESPONSES[api_key].name} v{api_version}: {type(exc).__name__}: {exc}") from None


def encode_response(header: RequestHeader, body: Any) -> list:
    """The response frame to ``header``'s request, size prefix included, as chunks.

    ``body`` is a data object, a dict or any object with the field
    attributes, or an ``EncodedBody`` of this api key and version. The size
    prefix counts every chunk, spliced records included.
    """
    api_key, api_version = header.api_key, header.api_version
    out = bytearray(4)
    write_response_header(out, api_key, api_version, header.correlation_id)
    splices: list = []
    if isinstance(body, EncodedBody):
        out += body
    else:
        _encode(api_key, api_version, body, out, splices)
    size = len(out) - 4
    for _offset, _chunk, chunk_size in splices:
        size += chunk_size
    INT32.pack_into(out, 0, size)
    return assemble(out, splices)


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytes:
    """A request frame with its size prefix, as bytes (records must be in memory)."""
    if not is_supported(api_key, api_version):
        raise ProtocolEncodeError(f"no request schema for api key {api_key} v{api_version}")
    schema = REQUESTS[api_key]
    out = bytearray(4)
    write_request_header(out, RequestHeader(api_key, api_version, correlation_id, client_id))
    splices: list = []
    try:
        struct_encoder(schema, api_version, schema.is_flexible(api_version))(body, out, splices)
    except ProtocolEncodeError:
        raise
    except ENCODE_FAILURES as exc:
        raise ProtocolEncodeError(f"{schema.name} v{api_version}: {type(exc).__name__}: {exc}") from None
    INT32.pack_into(out, 0, len(out) - 4 + sum(chunk_size for _offset, _chunk, chunk_size in splices))
    return flatten(out, splices)


def decode_response(api_key: int, api_version: int, frame: Any) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame without its size prefix."""
    if not is_supported(api_key, api_version):
        raise ProtocolDecodeError(f"no response schema for api key {api_key} v{api_version}")
    view = frame if type(frame) is memoryview else memoryview(frame)
    correlation_id, pos = read_response_header(view, api_key, api_version)
    schema = RESPONSES[api_key]
    decoder = struct_decoder(schema, api_version, schema.is_flexible(api_version))
    try:
        body, pos = decoder(view, pos, len(view))
    except ProtocolDecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise ProtocolDecodeError(f"{schema.name} v{api_version}: {type(exc).__name__}: {exc}") from None
    if pos != len(view):
        raise ProtocolDecodeError(f"{schema.name} v{api_version}: {len(view) - pos} trailing bytes")
    return correlation_id, body


def api_versions_body(error_code: int = ErrorCode.NONE, throttle_time_ms: int = 0) -> dict:
    """An ApiVersions response body listing every served api key and range."""
    return {
        "error_code": error_code,
        "api_keys": [{"api_key": int(key), "min_version": low, "max_version": high}
                     for key, (low, high) in SUPPORTED_VERSIONS.items()],
        "throttle_time_ms": throttle_time_ms,
    }


def api_versions_error_response(header: RequestHeader) -> list:
    """The frame answering an ApiVersions request at an unsupported version.

    KIP-511: a v0-format body (readable by every client) with error 35
    UNSUPPORTED_VERSION and the full list of served keys, so the client can
    retry at a version it shares with the broker; response header v0.
    """
    v0_header = header._replace(api_key=int(ApiKey.API_VERSIONS), api_version=0)
    return encode_response(v0_header, api_versions_body(ErrorCode.UNSUPPORTED_VERSION))

"""Sans-io Kafka wire protocol: bytes in, objects out; no sockets, no await.

Public API (see frames.py for frame layouts, header.py for headers,
schema.py for how message schemas are declared, messages/ for the schemas):

- ``read_request_header(frame) -> (RequestHeader, body_offset)``
- ``decode_request(frame) -> Request`` (``.header .api_key .api_version .body``)
- ``encode_response(header, body) -> list`` of chunks, size prefix included
- ``encode_request(api_key, api_version, correlation_id, client_id, body) -> bytes``
- ``decode_response(api_key, api_version, frame) -> (correlation_id, body)``
- ``api_versions_error_response(header) -> list``; ``api_versions_body(...)``
- ``supported_versions() -> {ApiKey: (min, max)}``, ``is_supported(key, version)``
- ``request_header_version(key, version)``, ``response_header_version(key, version)``
- ``encode_struct / decode_struct / write_struct / read_struct`` for any
  ``schema.Struct`` (e.g. ``__consumer_offsets`` keys and values)
- ``ApiKey``, ``ErrorCode``, ``RequestHeader``, ``Request``
- ``ProtocolError``, ``ProtocolDecodeError``, ``ProtocolEncodeError``,
  ``UnsupportedVersionError``, ``UnknownApiKeyError``

``frame`` arguments exclude the 4-byte size prefix. Bodies are generated
data objects (``kcore.protocol.messages.produce.ProduceRequest`` ...);
encoders also take dicts or any object with the field attributes.
"""
from kcore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kcore.protocol.codec import decode_struct, encode_struct, read_struct, write_struct
from kcore.protocol.errors import ErrorCode
from kcore.protocol.exceptions import (
    ProtocolDecodeError,
    ProtocolEncodeError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kcore.protocol.frames import (
    EncodedBody,
    Request,
    api_versions_body,
    api_versions_error_response,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    is_supported,
    supported_versions,
)
from kcore.protocol.header import (
    RequestHeader,
    read_request_header,
    request_header_version,
    response_header_version,
)
from kcore.protocol.messages import REQUESTS, RESPONSES
from kcore.protocol.schema import to_dict

__all__ = [
    "REQUESTS",
    "RESPONSES",
    "SUPPORTED_VERSIONS",
    "ApiKey",
    "EncodedBody",
    "ErrorCode",
    "ProtocolDecodeError",
    "ProtocolEncodeError",
    "ProtocolError",
    "Request",
    "RequestHeader",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "api_versions_body",
    "api_versions_error_response",
    "decode_request",
    "decode_response",
    "decode_struct",
    "encode_body",
    "encode_request",
    "encode_response",
    "encode_struct",
    "is_supported",
    "read_request_header",
    "read_struct",
    "request_header_version",
    "response_header_version",
    "supported_versions",
    "to_dict",
    "write_struct",
]

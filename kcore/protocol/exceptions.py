"""Exceptions raised by the sans-io protocol layer.

Decoding a request frame can fail in exactly three ways, each with its own
type so the server can choose between answering and closing the connection:

- ``UnknownApiKeyError``: the api key is not one this broker serves.
- ``UnsupportedVersionError``: a served api key at a version outside the
  supported range (the server answers ApiVersions with error 35, KIP-511).
- ``ProtocolDecodeError``: a malformed or truncated header or body.

The first two carry the parsed request header (correlation id included).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kcore.protocol.header import RequestHeader


class ProtocolError(Exception):
    """Base of every exception raised by kcore.protocol."""


class ProtocolDecodeError(ProtocolError, ValueError):
    """The bytes do not form a valid message for the schema and version."""


class ProtocolEncodeError(ProtocolError, ValueError):
    """A value cannot be encoded (wrong type, out of range, null where not nullable)."""


class UnknownApiKeyError(ProtocolError):
    """The request's api key is not served; ``header`` is the parsed header."""

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"unknown api key {header.api_key} (version {header.api_version})")
        self.header = header


class UnsupportedVersionError(ProtocolError):
    """A served api key at an unsupported version; ``header`` is the parsed header."""

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"api key {header.api_key} version {header.api_version} is not supported")
        self.header = header

"""Encode and decode any struct schema at any version, with uniform errors.

The compiled functions come from ``decoder`` and ``encoder``; here every
failure they can raise on bad input becomes ProtocolDecodeError or
ProtocolEncodeError. ``flexible`` defaults to the schema's flexibleVersions.
"""
from __future__ import annotations

import struct
from typing import Any

from kcore.protocol.decoder import struct_decoder
from kcore.protocol.encoder import struct_encoder
from kcore.protocol.exceptions import ProtocolDecodeError, ProtocolEncodeError
from kcore.protocol.primitives import flatten
from kcore.protocol.schema import Struct

# What generated decoders raise on truncated or malformed input:
# struct.error (short unpack), IndexError (varint past the end), ValueError
# (UnicodeDecodeError, ProtocolDecodeError), OverflowError (huge counts).
DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError)
# What generated encoders raise on bad values: struct.error (range, type),
# AttributeError (.encode on a non-str), TypeError (len/iteration), ValueError.
ENCODE_FAILURES = (struct.error, AttributeError, TypeError, ValueError, OverflowError)


def _flexible(schema: Struct, version: int, flexible: bool | None) -> bool:
    return schema.is_flexible(version) if flexible is None else flexible


def read_struct(schema: Struct, version: int, buf: memoryview, pos: int = 0, *,
                flexible: bool | None = None) -> tuple[Any, int]:
    """Decodes one struct at ``pos``; returns (object, position after it)."""
    decode = struct_decoder(schema, version, _flexible(schema, version, flexible))
    try:
        return decode(buf, pos, len(buf))
    except ProtocolDecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise ProtocolDecodeError(f"{schema.name} v{version}: {type(exc).__name__}: {exc}") from None


def decode_struct(schema: Struct, version: int, data: Any, *, flexible: bool | None = None) -> Any:
    """Decodes ``data`` as exactly one struct (trailing bytes are an error)."""
    view = data if type(data) is memoryview else memoryview(data)
    obj, pos = read_struct(schema, version, view, 0, flexible=flexible)
    if pos != len(view):
        raise ProtocolDecodeError(f"{schema.name} v{version}: {len(view) - pos} trailing bytes")
    return obj


def write_struct(schema: Struct, version: int, obj: Any, out: bytearray, splices: list, *,
                 flexible: bool | None = None) -> None:
    """Appends the encoding of ``obj`` to ``out`` (records chunks go to ``splices``)."""
    encode = struct_encoder(schema, version, _flexible(schema, version, flexible))
    try:
        encode(obj, out, splices)
    except ProtocolEncodeError:
        raise
    except ENCODE_FAILURES as exc:
        raise ProtocolEncodeError(f"{schema.name} v{version}: {type(exc).__name__}: {exc}") from None


def encode_struct(schema: Struct, version: int, obj: Any, *, flexible: bool | None = None) -> bytes:
    """The encoding of ``obj`` as one bytes object."""
    out = bytearray()
    splices: list = []
    write_struct(schema, version, obj, out, splices, flexible=flexible)
    return flatten(out, splices)

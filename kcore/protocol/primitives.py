"""Kafka protocol primitive types: readers and writers over byte buffers.

Byte layouts (Kafka protocol guide, "Protocol Primitive Types"), big-endian:

    int8/int16/int32/int64     two's complement, 1/2/4/8 bytes
    uint16/uint32              unsigned, 2/4 bytes
    float64                    IEEE 754 double, 8 bytes
    boolean                    int8, 0 = false, anything else = true
    uuid                       16 bytes
    unsigned_varint            7 bits per byte, low group first, high bit = more (<= 5 bytes)
    varint / varlong           zigzag-encoded signed value as an unsigned varint
    string                     int16 length N, then N bytes of UTF-8
    nullable_string            same, length -1 = null
    compact_(nullable_)string  unsigned_varint N+1 (0 = null), then N bytes
    bytes / nullable_bytes     int32 length (-1 = null), then the bytes
    compact_(nullable_)bytes   unsigned_varint N+1 (0 = null), then the bytes
    array / compact_array      int32 count (-1 = null) / unsigned_varint count+1
    tagged_fields              unsigned_varint count, then per field:
                               unsigned_varint tag, unsigned_varint size, size bytes

Record sets (the ``records`` type) are bytes on the wire; decoding returns a
memoryview slice of the frame (no copy). Encoding accepts a bytes-like object,
a *file slice* (any non-buffer object with an int ``size``: the bytes stay in
a file and are written later by sendfile) or a list of such chunks. Encoders
append to a ``bytearray`` and record each pass-through chunk as a splice
``(offset, chunk, size)``; ``assemble`` turns the two into the chunk list.
"""
from __future__ import annotations

import builtins
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kcore.protocol.constants import INT32_MAX, INT32_MIN
from kcore.protocol.exceptions import ProtocolDecodeError, ProtocolEncodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

NULL_INT16 = b"\xff\xff"
NULL_INT32 = b"\xff\xff\xff\xff"
ZERO_UUID = uuid.UUID(int=0)

# Record chunks up to this size are copied into the frame buffer instead of
# being passed through: an extra list entry and iovec costs more than copying
# half a KiB (~50 ns), while batches from the log are usually >= 1 KiB.
INLINE_RECORDS_MAX = 512

_UVARINT_MAX_BYTES = 5  # 32-bit unsigned varints (Kafka ByteUtils.readUnsignedVarint)
_VARLONG_MAX_BYTES = 10


def truncated(what: str = "buffer") -> ProtocolDecodeError:
    return ProtocolDecodeError(f"truncated {what}")


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    value = b & 0x7F
    shift = 7
    for _ in range(_UVARINT_MAX_BYTES - 1):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise ProtocolDecodeError("unsigned varint longer than 5 bytes")


def read_uvarlong(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(_VARLONG_MAX_BYTES):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise ProtocolDecodeError("varlong longer than 10 bytes")


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _base128(raw: int) -> bytes:
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return bytes((value,))
    if 0x80 <= value < 0x200000:  # 2 or 3 bytes: a Fetch answer's records sizes, inline
        if value < 0x4000:
            return bytes(((value & 0x7F) | 0x80, value >> 7))
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    if value < 0 or value > 0xFFFFFFFF:
        raise ProtocolEncodeError(f"unsigned varint out of range: {value}")
    return _base128(value)


def varint(value: int) -> bytes:
    if not INT32_MIN <= value <= INT32_MAX:
        raise ProtocolEncodeError(f"varint out of range: {value}")
    return _base128(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise ProtocolEncodeError(f"varlong out of range: {value}")
    return _base128(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _slice_end(pos: int, n: int, end: int, what: str) -> int:
    stop = pos + n
    if stop > end:
        raise truncated(what)
    return stop


def read_string(buf: memoryview, pos: int, end: int, nullable: bool, compact: bool) -> tuple[str | None, int]:
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        (n,) = INT16.unpack_from(buf, pos)
        pos += 2
    if n < 0:
        if nullable:
            return None, pos
        raise ProtocolDecodeError("null string in a non-nullable field")
    stop = _slice_end(pos, n, end, "string")
    return str(buf[pos:stop], "utf-8"), stop


def read_bytes(buf: memoryview, pos: int, end: int, nullable: bool, compact: bool) -> tuple[bytes | None, int]:
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        (n,) = INT32.unpack_from(buf, pos)
        pos += 4
    if n < 0:
        if nullable:
            return None, pos
        raise ProtocolDecodeError("null bytes in a non-nullable field")
    stop = _slice_end(pos, n, end, "bytes")
    return bytes(buf[pos:stop]), stop


def read_uuid(buf: memoryview, pos: int, end: int) -> tuple[uuid.UUID, int]:
    stop = _slice_end(pos, 16, end, "uuid")
    return uuid.UUID(bytes=bytes(buf[pos:stop])), stop


def skip_tagged_fields(buf: memoryview, pos: int, end: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos = _slice_end(pos, size, end, "tagged field")
    return pos


TagDecoder = Callable[[memoryview, int, int], tuple[Any, int]]


def read_tagged_fields(buf: memoryview, pos: int, end: int, obj: Any,
                       known: dict[int, tuple[str, TagDecoder]]) -> int:
    """Reads a tagged-field section into ``obj``; unknown tags are skipped."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        stop = _slice_end(pos, size, end, "tagged field")
        entry = known.get(tag)
        if entry is not None:
            name, decode = entry
            value, after = decode(buf, pos, stop)
            if after != stop:
                raise ProtocolDecodeError(f"tagged field {name} has {stop - pos} bytes, value used {after - pos}")
            setattr(obj, name, value)
        pos = stop
    return pos


def write_tagged_fields(out: bytearray, tags: list[tuple[int, bytes]]) -> None:
    out += uvarint(len(tags))
    for tag, data in sorted(tags, key=lambda item: item[0]):
        out += uvarint(tag)
        out += uvarint(len(data))
        out += data


def encode_string(value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except AttributeError:
        raise ProtocolEncodeError(f"expected str, got {type(value).__name__}") from None


# How to size a records chunk, by type: len(), .nbytes, memoryview(), .size.
_BY_LEN, _BY_NBYTES, _BY_VIEW, FILE_SLICE = range(4)
# Learnt from the first instance of each type (buffer support is per type).
chunk_kinds: dict[type, int] = {bytes: _BY_LEN, bytearray: _BY_LEN, memoryview: _BY_NBYTES}


def _chunk_kind(chunk: Any) -> int:
    kind = chunk_kinds.get(type(chunk))
    if kind is None:
        try:
            memoryview(chunk).release()
            kind = _BY_VIEW
        except TypeError:
            # Learnt only from a real file slice: a type learnt from a bad
            # value would send the next one down the encoders' inline
            # `v.size`, whose error no longer names the records field.
            _file_slice_size(chunk)
            kind = FILE_SLICE
        chunk_kinds[type(chunk)] = kind
    return kind


def _file_slice_size(chunk: Any) -> int:
    size = getattr(chunk, "size", None)
    if type(size) is not int or size < 0:
        raise ProtocolEncodeError(
            f"records chunk must be bytes-like or have an int size: {type(chunk).__name__}")
    return size


def record_chunk_size(chunk: Any) -> tuple[int, bool]:
    """(size in bytes, is_buffer) of a records chunk: a buffer or a file slice."""
    kind = _chunk_kind(chunk)
    if kind == _BY_LEN:
        return len(chunk), True
    if kind == _BY_NBYTES:
        return chunk.nbytes, True
    if kind == _BY_VIEW:
        with memoryview(chunk) as view:
            return view.nbytes, True
    return _file_slice_size(chunk), False


def _put_chunk(chunk: Any, size: int, is_buffer: bool, out: bytearray, splices: list) -> None:
    if size == 0:
        return
    if is_buffer and size <= INLINE_RECORDS_MAX:
        out += chunk
    else:
        splices.append((len(out), chunk, size))


def put_records(value: Any, out: bytearray, splices: list, compact: bool, nullable: bool) -> None:
    """Writes a records field: length prefix, then the chunks inline or spliced."""
    if value is None:
        if not nullable:
            raise ProtocolEncodeError("null records in a non-nullable field")
        out += b"\x00" if compact else NULL_INT32
        return
    kind = type(value)
    if kind is list or kind is tuple:
        sized = [(piece, *record_chunk_size(piece)) for piece in value]
        total = sum(size for _piece, size, _is_buffer in sized)
        out += uvarint(total + 1) if compact else INT32.pack(total)
        for piece, size, is_buffer in sized:
            _put_chunk(piece, size, is_buffer, out, splices)
        return
    if chunk_kinds.get(kind) == FILE_SLICE:
        size = _file_slice_size(value)
        out += uvarint(size + 1) if compact else INT32.pack(size)
        if size:
            splices.append((len(out), value, size))
        return
    size, is_buffer = record_chunk_size(value)
    out += uvarint(size + 1) if compact else INT32.pack(size)
    _put_chunk(value, size, is_buffer, out, splices)


def assemble(out: bytearray, splices: list) -> list:
    """Chunk list: the encoded bytes with each spliced records chunk in place."""
    if not splices:
        return [bytes(out)]
    chunks: list = []
    start = 0
    with memoryview(out) as view:
        for offset, piece, _size in splices:
            if offset > start:
                chunks.append(bytes(view[start:offset]))
            chunks.append(piece)
            start = offset
        if start < len(out):
            chunks.append(bytes(view[start:]))
    return chunks


def flatten(out: bytearray, splices: list) -> bytes:
    """One bytes object; fails on file slices, whose bytes are not in memory."""
    if not splices:
        return bytes(out)
    parts = []
    for chunk in assemble(out, splices):
        if not record_chunk_size(chunk)[1]:
            raise ProtocolEncodeError("a file slice cannot be flattened into bytes")
        parts.append(chunk)
    return b"".join(parts)


class Reader:
    """Sequential reads from a buffer. Not thread-safe: one reader, one cursor."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: Any, pos: int = 0) -> None:
        view = buf if type(buf) is memoryview else memoryview(buf)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        self.buf = view
        self.pos = pos
        self.end = len(view)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, codec: struct.Struct) -> Any:
        try:
            (value,) = codec.unpack_from(self.buf, self.pos)
        except struct.error:
            raise truncated() from None
        self.pos += codec.size
        return value

    def int8(self) -> int:
        return self._fixed(INT8)

    def int16(self) -> int:
        return self._fixed(INT16)

    def int32(self) -> int:
        return self._fixed(INT32)

    def int64(self) -> int:
        return self._fixed(INT64)

    def uint16(self) -> int:
        return self._fixed(UINT16)

    def uint32(self) -> int:
        return self._fixed(UINT32)

    def float64(self) -> float:
        return self._fixed(FLOAT64)

    def boolean(self) -> bool:
        return self._fixed(INT8) != 0

    def _variable(self, read: Callable, *args: Any) -> Any:
        try:
            value, self.pos = read(self.buf, self.pos, *args)
        except (IndexError, struct.error):
            raise truncated() from None
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"invalid UTF-8: {exc}") from None
        return value

    def uuid(self) -> uuid.UUID:
        return self._variable(read_uuid, self.end)

    def unsigned_varint(self) -> int:
        return self._variable(read_uvarint)

    def varint(self) -> int:
        return self._variable(read_varint)

    def varlong(self) -> int:
        return self._variable(read_varlong)

    def string(self, *, nullable: bool = False, compact: bool = False) -> str | None:
        return self._variable(read_string, self.end, nullable, compact)

    def bytes(self, *, nullable: bool = False, compact: bool = False) -> bytes | None:
        return self._variable(read_bytes, self.end, nullable, compact)

    def records(self, *, compact: bool = False) -> memoryview | None:
        if compact:
            n = self.unsigned_varint() - 1
        else:
            n = self.int32()
        if n < 0:
            return None
        stop = _slice_end(self.pos, n, self.end, "records")
        view = self.buf[self.pos:stop]
        self.pos = stop
        return view

    def array(self, read_item: Callable[[Reader], Any], *, nullable: bool = False,
              compact: bool = False) -> list | None:
        n = self.unsigned_varint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise ProtocolDecodeError("null array in a non-nullable field")
        if n > self.remaining:
            raise truncated("array")
        return [read_item(self) for _ in range(n)]

    def skip_tagged_fields(self) -> None:
        try:
            self.pos = skip_tagged_fields(self.buf, self.pos, self.end)
        except (IndexError, struct.error):
            raise truncated("tagged fields") from None


class Writer:
    """Appends encoded values to a bytearray; records chunks may be spliced.

    Not thread-safe. ``chunks()`` gives the encoded frame as a list of bytes
    and untouched record chunks; ``getvalue()`` joins them into one bytes.
    """

    __slots__ = ("buf", "splices")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.splices: list = []

    def _fixed(self, codec: struct.Struct, value: Any) -> None:
        try:
            self.buf += codec.pack(value)
        except struct.error as exc:
            raise ProtocolEncodeError(str(exc)) from None

    def int8(self, value: int) -> None:
        self._fixed(INT8, value)

    def int16(self, value: int) -> None:
        self._fixed(INT16, value)

    def int32(self, value: int) -> None:
        self._fixed(INT32, value)

    def int64(self, value: int) -> None:
        self._fixed(INT64, value)

    def uint16(self, value: int) -> None:
        self._fixed(UINT16, value)

    def uint32(self, value: int) -> None:
        self._fixed(UINT32, value)

    def float64(self, value: float) -> None:
        self._fixed(FLOAT64, value)

    def boolean(self, value: bool) -> None:
        self.buf.append(1 if value else 0)

    def uuid(self, value: uuid.UUID) -> None:
        self.buf += value.bytes

    def unsigned_varint(self, value: int) -> None:
        self.buf += uvarint(value)

    def varint(self, value: int) -> None:
        self.buf += varint(value)

    def varlong(self, value: int) -> None:
        self.buf += varlong(value)

    def _length(self, n: int | None, compact: bool, null: bytes) -> None:
        if n is None:
            self.buf += b"\x00" if compact else null
        elif compact:
            self.buf += uvarint(n + 1)
        elif null is NULL_INT16:
            self._fixed(INT16, n)
        else:
            self._fixed(INT32, n)

    def string(self, value: str | None, *, compact: bool = False) -> None:
        if value is None:
            self._length(None, compact, NULL_INT16)
            return
        data = encode_string(value)
        self._length(len(data), compact, NULL_INT16)
        self.buf += data

    def bytes(self, value: Any, *, compact: bool = False) -> None:
        if value is None:
            self._length(None, compact, NULL_INT32)
            return
        with memoryview(value) as view:
            self._length(view.nbytes, compact, NULL_INT32)
            self.buf += view

    def records(self, value: Any, *, compact: bool = False) -> None:
        put_records(value, self.buf, self.splices, compact, True)

    def array(self, items: list | None, write_item: Callable[[Writer, Any], None], *,
              compact: bool = False) -> None:
        if items is None:
            self._length(None, compact, NULL_INT32)
            return
        self._length(len(items), compact, NULL_INT32)
        for item in items:
            write_item(self, item)

    def tagged_fields(self, tags: list[tuple[int, builtins.bytes]] | None = None) -> None:
        write_tagged_fields(self.buf, tags or [])

    def chunks(self) -> list:
        return assemble(self.buf, self.splices)

    def getvalue(self) -> builtins.bytes:
        return flatten(self.buf, self.splices)

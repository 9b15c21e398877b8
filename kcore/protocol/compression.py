"""Kafka batch compression codecs: the bytes after recordsCount in a v2 batch.

The codec id sits in bits 0-2 of the RecordBatch attributes (KIP-98 layout;
Kafka `CompressionType.java`): none 0, gzip 1, snappy 2, lz4 3, zstd 4;
5-7 are unassigned and rejected with :class:`UnsupportedCodecError`.

Formats, as the Java client (`org.apache.kafka.common.compress`) writes them
and as librdkafka / kafka-python / aiokafka read them:

gzip (1)
    RFC 1952 gzip members (not bare zlib/deflate). Java wraps the stream in
    `GZIPOutputStream` with `Deflater.DEFAULT_COMPRESSION`, which zlib maps to
    level 6. Readers accept several concatenated members, so we do too.

snappy (2)
    Two framings exist in the wild and both are accepted on decompress:

    * xerial block framing, written by Java (`SnappyOutputStream`),
      kafka-python and aiokafka::

        0  magic   \\x82 S N A P P Y \\x00     (8 bytes)
        8  version i32 BE (1)
        12 compat  i32 BE (1)
        16 [block length i32 BE][raw snappy block] ...

      each block compresses at most 32 KiB of input (xerial's default block
      size). Version/compat are not checked: some producers write them
      little-endian, and only one framing version exists.
    * raw snappy (one block, no header), written by librdkafka.

    Compression writes the xerial framing, as the Java client does.

lz4 (3)
    LZ4 frame format (lz4_Frame_format.md v1.5.1), as Java's
    `Lz4BlockOutputStream` writes it: 64 KiB independent blocks, no block or
    content checksum, no content size. Java readers reject linked blocks, so
    block_linked is off. Kafka's default level 9 selects lz4-java's *fast*
    compressor, which is LZ4's default (python-lz4 level 0).

zstd (4)
    Zstandard frames (RFC 8878), level 3 (Kafka's and zstd's default). Frames
    without a content size (streaming writers such as Java's
    `ZstdOutputStream`) and several concatenated frames are accepted.

Decompression is bounded (:func:`decompress`'s ``max_size``): a few KiB of
gzip or zstd inflate to gigabytes, and a broker must never allocate without
limit for one batch. No codec is asked for more than the limit plus a bounded
slack: zlib and lz4 frames stop at an output length, a snappy block and a
zstd frame that records its content size state the length before anything
is decompressed, and a streamed zstd frame is fed in slices that cannot
inflate past the limit by more than a few MiB. Past the limit the answer is
:class:`DecompressedSizeError`; why the default limit is 64 times Kafka's
``message.max.bytes`` is written at ``DECOMPRESSION_FACTOR``.

Thread safety: :func:`compress` and :func:`decompress` may be called from any
thread. zstd contexts are not thread-safe, so each thread keeps its own
compressor and decompressor (``threading.local``); the other libraries are
called through stateless one-shot functions.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib

import cramjam
import lz4.frame
import zstandard

__all__ = [
    "CompressionType",
    "CompressionError",
    "DecompressedSizeError",
    "UnsupportedCodecError",
    "compress",
    "decompress",
    "max_decompressed_size",
    "codec_from_name",
    "DECOMPRESSION_FACTOR",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "GZIP_LEVEL",
    "LZ4_LEVEL",
    "ZSTD_LEVEL",
    "KAFKA_LZ4_DEFAULT_LEVEL",
    "SNAPPY_XERIAL_BLOCK_SIZE",
]


class CompressionType(enum.IntEnum):
    """Codec ids of RecordBatch attributes bits 0-2 (Kafka `CompressionType`)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka uses in configs and kafka-dump-log output."""
        return self.name.lower()


class CompressionError(ValueError):
    """Compressed bytes that the codec cannot decode (truncated or corrupt)."""

    def __init__(self, codec: int, reason: str) -> None:
        super().__init__(f"{_codec_label(codec)}: {reason}")
        self.codec = codec
        self.reason = reason


class DecompressedSizeError(CompressionError):
    """The records inflate past the limit the caller set (``max_size``):
    far more than any producer writes into one batch."""

    def __init__(self, codec: int, max_size: int) -> None:
        super().__init__(codec, f"the records inflate past {max_size} bytes")
        self.max_size = max_size


class UnsupportedCodecError(ValueError):
    """A codec id outside 0-4 (ids 5-7 fit in the attribute bits but are unassigned)."""

    def __init__(self, codec: int) -> None:
        super().__init__(f"unsupported compression codec id {codec} (known: 0 none, 1 gzip, "
                         f"2 snappy, 3 lz4, 4 zstd)")
        self.codec = codec


# Java's GZIPOutputStream default: Deflater.DEFAULT_COMPRESSION (-1), which zlib maps to 6.
GZIP_LEVEL = 6
# Kafka's lz4 default level 9 picks lz4-java's fast compressor, i.e. LZ4's default
# (non-HC) mode, which python-lz4 calls level 0.
LZ4_LEVEL = 0
# compression.lz4.level's default: the one level lz4-java compresses in fast mode.
KAFKA_LZ4_DEFAULT_LEVEL = 9
# Kafka's (and libzstd's ZSTD_CLEVEL_DEFAULT) default level.
ZSTD_LEVEL = 3
# xerial SnappyOutputStream's default block size: each framed block holds at most
# this many uncompressed bytes.
SNAPPY_XERIAL_BLOCK_SIZE = 32 * 1024

# Kafka's default message.max.bytes (1 MiB + 12 bytes of log overhead).
KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1048588
# One batch's records may inflate to at most this many times the topic's
# max.message.bytes (never less than 64 times Kafka's default, 64 MiB).
# What producers write stays far below: each record is checked
# uncompressed against the client's request limit (Java max.request.size
# and kafka-python/aiokafka max_request_size, 1 MiB; librdkafka
# message.max.bytes, 1,000,000), librdkafka and kafka-python close a batch
# at batch.size / batch_size of uncompressed records (1,000,000 and 16 KiB),
# and Java closes one at batch.size of estimated compressed bytes (16 KiB by
# default), which for log text compressed 3-6 times (docs/performance.md)
# is under 100 KiB of records. A 64:1 ratio over a whole max-size batch is
# eleven times the best ratio measured on log text (zstd, 5.7), while a
# decompression bomb (46 KiB of zstd inflating to 1 GiB) stops at 64 MiB;
# the decompressed pieces are joined once, so a batch holds at most twice
# the limit while it is decompressed.
DECOMPRESSION_FACTOR = 64
# A zstd block holds at most 128 KiB, and its shortest form is an RLE block
# of 4 bytes (3-byte header, the repeated byte): no input byte yields more
# than 32 KiB of output.
ZSTD_MAX_INFLATION = 32 * 1024
# The smallest slice a streamed zstd frame is fed in: 64 bytes cannot
# inflate past 2 MiB, while a large budget makes the slices large.
_ZSTD_MIN_STEP = 64
# First output window of an lz4 frame, doubled while the output grows.
_LZ4_FIRST_WINDOW = 1 << 20

_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip header and trailer, not a zlib stream
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)  # 16
_BLOCK_LENGTH = struct.Struct(">i")

_NAMES = {codec.kafka_name: codec for codec in CompressionType}


def codec_from_name(name: str) -> CompressionType:
    """Map a Kafka codec name ("none", "gzip", "snappy", "lz4", "zstd") to its id."""
    try:
        return _NAMES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown compression type {name!r}; expected one of "
                         f"{', '.join(_NAMES)}") from None


def _codec_label(codec: int) -> str:
    try:
        return CompressionType(codec).kafka_name
    except ValueError:
        return f"codec {codec}"


class _ZstdContexts(threading.local):
    """Per thread, one zstd compressor per level used and one decompressor
    (the contexts are not thread-safe)."""

    def __init__(self) -> None:
        # write_content_size lets readers size the output buffer in one step.
        self.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
        self.compressors = {ZSTD_LEVEL: self.compressor}
        self.decompressor = zstandard.ZstdDecompressor()

    def compressor_at(self, level: int) -> zstandard.ZstdCompressor:
        if level not in self.compressors:
            self.compressors[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
        return self.compressors[level]


_zstd = _ZstdContexts()


# ---------------------------------------------------------------- compress

def compress(codec: int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` as a Kafka producer using ``codec`` would, at
    Kafka's ``compression.<codec>.level`` ``level`` (None: the codec's
    default). gzip -1 is zlib's default (6); lz4 9, Kafka's default, is
    LZ4's fast mode (lz4-java's fastCompressor) and any other level LZ4 HC
    at that level (python-lz4 clamps above 12, as lz4-java does); zstd
    takes the level as it is."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return zlib.compress(data, GZIP_LEVEL if level is None else level, _GZIP_WBITS)
    if codec == CompressionType.SNAPPY:
        return _snappy_xerial_compress(data)
    if codec == CompressionType.LZ4:
        return lz4.frame.compress(
            data,
            compression_level=LZ4_LEVEL if level in (None, KAFKA_LZ4_DEFAULT_LEVEL) else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
    if codec == CompressionType.ZSTD:
        return _zstd.compressor_at(ZSTD_LEVEL if level is None else level).compress(data)
    raise UnsupportedCodecError(codec)


def _snappy_xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), SNAPPY_XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + SNAPPY_XERIAL_BLOCK_SIZE]))
        parts.append(_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# -------------------------------------------------------------- decompress

def max_decompressed_size(max_message_bytes: int) -> int:
    """The most bytes one batch's records may inflate to, for a topic whose
    ``max.message.bytes`` is ``max_message_bytes`` (see DECOMPRESSION_FACTOR)."""
    return DECOMPRESSION_FACTOR * max(max_message_bytes, KAFKA_DEFAULT_MAX_MESSAGE_BYTES)


DEFAULT_MAX_DECOMPRESSED_SIZE = max_decompressed_size(KAFKA_DEFAULT_MAX_MESSAGE_BYTES)


def decompress(codec: int, data: bytes | bytearray | memoryview,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress a batch's records section written with ``codec``, never
    producing (or allocating for) more than ``max_size`` bytes.

    Raises :class:`DecompressedSizeError` once the output would pass
    ``max_size``, :class:`CompressionError` on truncated or corrupt input
    and :class:`UnsupportedCodecError` for an unknown codec id.
    """
    if codec == CompressionType.NONE:
        return bytes(data)
    if len(data) == 0 and 0 < codec <= CompressionType.ZSTD:
        raise CompressionError(codec, "empty input")
    if codec == CompressionType.GZIP:
        return _gzip_decompress(data, max_size)
    if codec == CompressionType.SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == CompressionType.LZ4:
        return _lz4_decompress(data, max_size)
    if codec == CompressionType.ZSTD:
        return _zstd_decompress(data, max_size)
    raise UnsupportedCodecError(codec)


def _gzip_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    remaining = bytes(data)
    out: list[bytes] = []
    size = 0
    try:
        while True:
            member = zlib.decompressobj(_GZIP_WBITS)
            # One byte past the limit tells "too large" from "exactly the limit".
            chunk = member.decompress(remaining, max_size - size + 1)
            size += len(chunk)
            if size > max_size:
                raise DecompressedSizeError(CompressionType.GZIP, max_size)
            out.append(chunk)
            if not member.eof:
                raise CompressionError(CompressionType.GZIP, "truncated gzip member")
            remaining = member.unused_data
            if not remaining:
                return b"".join(out)
    except zlib.error as exc:
        raise CompressionError(CompressionType.GZIP, str(exc)) from exc


def _snappy_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    view = memoryview(data).cast("B")
    try:
        if len(view) >= _XERIAL_HEADER_SIZE and view[:8] == _XERIAL_MAGIC:
            return _snappy_xerial_blocks(view, max_size)
        _check_snappy_length(view, max_size)
        return bytes(cramjam.snappy.decompress_raw(view))
    except cramjam.DecompressionError as exc:
        raise CompressionError(CompressionType.SNAPPY, str(exc)) from exc


def _check_snappy_length(block: memoryview, max_size: int) -> int:
    """A raw snappy block starts with its uncompressed length: refuse it
    before anything is allocated for it."""
    length = cramjam.snappy.decompress_raw_len(block)
    if length > max_size:
        raise DecompressedSizeError(CompressionType.SNAPPY, max_size)
    return length


def _snappy_xerial_blocks(view: memoryview, max_size: int) -> bytes:
    out = []
    position = _XERIAL_HEADER_SIZE
    end = len(view)
    size = 0
    while position < end:
        if end - position < 4:
            raise CompressionError(CompressionType.SNAPPY, "truncated xerial block length")
        (block_length,) = _BLOCK_LENGTH.unpack_from(view, position)
        position += 4
        if block_length < 0 or position + block_length > end:
            raise CompressionError(
                CompressionType.SNAPPY,
                f"xerial block of {block_length} bytes at {position - 4} overruns {end} bytes")
        block = view[position:position + block_length]
        size += _check_snappy_length(block, max_size - size)
        out.append(bytes(cramjam.snappy.decompress_raw(block)))
        position += block_length
    return b"".join(out)


def _lz4_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    # python-lz4 allocates max_length up front, so the window grows with the
    # output: a 64 MiB window costs ~100 us per call against ~10 us for 1 MiB.
    window = _LZ4_FIRST_WINDOW
    out: list[bytes] = []
    size = 0
    decompressor = lz4.frame.LZ4FrameDecompressor()
    source: bytes | bytearray | memoryview = data
    try:
        while not decompressor.eof:
            chunk = decompressor.decompress(source, min(window, max_size - size + 1))
            source = b""
            size += len(chunk)
            if size > max_size:
                raise DecompressedSizeError(CompressionType.LZ4, max_size)
            out.append(chunk)
            if decompressor.needs_input and not decompressor.eof:
                raise CompressionError(CompressionType.LZ4, "truncated lz4 frame")
            window *= 2
    except RuntimeError as exc:
        raise CompressionError(CompressionType.LZ4, str(exc)) from exc
    # Bytes after the frame are ignored, as Java's KafkaLZ4BlockInputStream does.
    return b"".join(out)


def _zstd_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    decompressor = _zstd.decompressor
    try:
        content_size = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise CompressionError(CompressionType.ZSTD, str(exc)) from exc
    if content_size > max_size:
        # The frame says so itself: refused before a byte is decompressed.
        raise DecompressedSizeError(CompressionType.ZSTD, max_size)
    if content_size >= 0:
        try:
            # Fast path: one frame that records its content size (zstd's
            # one-shot writers); its output is that size, within the limit.
            return decompressor.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass
    return _zstd_stream(decompressor, memoryview(data).cast("B"), max_size)


def _zstd_stream(decompressor: zstandard.ZstdDecompressor, view: memoryview,
                 max_size: int) -> bytes:
    """Streamed frames without a content size, or several frames back to
    back. zstd's streaming decoder has no output limit, so the input goes in
    slices small enough that none can inflate far past what is left of
    ``max_size`` (ZSTD_MAX_INFLATION)."""
    out: list[bytes] = []
    size = position = 0
    try:
        while position < len(view):
            frame = decompressor.decompressobj()
            while not frame.eof:
                if position >= len(view):
                    raise CompressionError(CompressionType.ZSTD, "truncated zstd frame")
                step = max(_ZSTD_MIN_STEP, (max_size - size) // ZSTD_MAX_INFLATION)
                piece = view[position:position + step]
                chunk = frame.decompress(piece)
                size += len(chunk)
                if size > max_size:
                    raise DecompressedSizeError(CompressionType.ZSTD, max_size)
                out.append(chunk)
                position += len(piece) - (len(frame.unused_data) if frame.eof else 0)
    except zstandard.ZstdError as exc:
        raise CompressionError(CompressionType.ZSTD, str(exc)) from exc
    return b"".join(out)

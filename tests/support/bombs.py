"""Decompression bombs: v2 batches whose compressed records section is a
few KiB (zstd), a few hundred KiB (gzip, lz4) and inflates to hundreds of
MiB or GiB of well-formed records (1 MiB values of zeros), built one
record at a time so the test never holds the inflated bytes."""
from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterator

import lz4.frame
import zstandard

from kcore._native.batch_layout import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CRC_OFFSET,
    HEADER,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from kcore._native.records import crc32c
from kcore.protocol.compression import CompressionType
from kcore.testing.batches import encode_record

MIB = 1 << 20
RECORD_VALUE_BYTES = MIB
BASE_TIMESTAMP = 1_700_000_000_000


def records(count: int) -> Iterator[bytes]:
    """``count`` keyed records, each holding RECORD_VALUE_BYTES zeros."""
    value = bytes(RECORD_VALUE_BYTES)
    for index in range(count):
        yield encode_record(index, 0, b"key-%d" % index, value)


def _gzip(chunks: Iterator[bytes]) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [compressor.compress(chunk) for chunk in chunks]
    return b"".join(out) + compressor.flush()


def _zstd(chunks: Iterator[bytes], content_size: int) -> bytes:
    """A streamed frame (no content size, as Java's ZstdOutputStream
    writes) when ``content_size`` is -1, else one that states it."""
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=content_size >= 0)
    stream = compressor.compressobj(size=content_size)
    out = [stream.compress(chunk) for chunk in chunks]
    return b"".join(out) + stream.flush()


def _lz4(chunks: Iterator[bytes]) -> bytes:
    compressor = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                              block_linked=False)
    out = [compressor.begin()] + [compressor.compress(chunk) for chunk in chunks]
    return b"".join(out) + compressor.flush()


@functools.lru_cache(maxsize=8)
def bomb_section(codec: int, inflated_mib: int, content_size: bool = False) -> bytes:
    """The compressed records section of ``inflated_mib`` records of 1 MiB
    (plus a few bytes of record framing each)."""
    if codec == CompressionType.GZIP:
        return _gzip(records(inflated_mib))
    if codec == CompressionType.LZ4:
        return _lz4(records(inflated_mib))
    if codec == CompressionType.ZSTD:
        size = sum(len(record) for record in records(inflated_mib)) if content_size else -1
        return _zstd(records(inflated_mib), size)
    raise ValueError(f"no bomb for codec {codec}: snappy inflates at most ~21 times")


def bomb_batch(codec: int, inflated_mib: int, content_size: bool = False,
               producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1, transactional: bool = False) -> bytearray:
    """A valid v2 batch (CRC-32C right) around ``bomb_section``."""
    section = bomb_section(codec, inflated_mib, content_size)
    attributes = codec | (TRANSACTIONAL_FLAG_MASK if transactional else 0)
    batch = bytearray(BATCH_HEADER_SIZE)
    HEADER.pack_into(batch, 0, 0, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(section), -1, 2, 0,
                     attributes,
                     inflated_mib - 1, BASE_TIMESTAMP, BASE_TIMESTAMP, producer_id,
                     producer_epoch, base_sequence, inflated_mib)
    batch += section
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
    return batch

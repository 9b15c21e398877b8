"""Decompression never produces more than its limit: bombs (a few KiB of
gzip, lz4 or zstd that inflate to hundreds of MiB or a GiB) stop at the
limit with DecompressedSizeError, having allocated about the limit
(tracemalloc sees the codecs' output buffers: bytes objects and PyMem);
output up to the limit decompresses whole, for every codec and framing."""
from __future__ import annotations

import os
import tracemalloc

import cramjam
import pytest

from kcore._native.records import encode_uvarint
from kcore.protocol.compression import (
    DECOMPRESSION_FACTOR,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionError,
    CompressionType,
    DecompressedSizeError,
    compress,
    decompress,
    max_decompressed_size,
)
from tests.support.bombs import MIB, bomb_section

LIMIT = 16 * MIB
BOMBS = [
    pytest.param(CompressionType.GZIP, 256, False, id="gzip-256MiB"),
    pytest.param(CompressionType.LZ4, 200, False, id="lz4-200MiB"),
    pytest.param(CompressionType.ZSTD, 1024, False, id="zstd-streamed-1GiB"),
    pytest.param(CompressionType.ZSTD, 1024, True, id="zstd-content-size-1GiB"),
]


@pytest.mark.parametrize("codec, inflated_mib, content_size", BOMBS)
def test_a_bomb_stops_at_the_limit_having_allocated_about_the_limit(codec, inflated_mib, content_size):
    section = bomb_section(codec, inflated_mib, content_size)
    assert len(section) < MIB  # fits in one batch of the default max.message.bytes
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError) as raised:
            decompress(codec, section, LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.max_size == LIMIT and raised.value.codec == codec
    # The chunks kept up to the limit, plus one chunk past it at most.
    assert peak < 3 * LIMIT, f"peak {peak / MIB:.0f} MiB for a {LIMIT // MIB} MiB limit"


def test_a_zstd_frame_stating_a_size_past_the_limit_is_refused_before_decompressing():
    section = bomb_section(CompressionType.ZSTD, 1024, True)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError):
            decompress(CompressionType.ZSTD, section, LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MIB


@pytest.mark.parametrize("codec, inflated_mib, content_size", [
    pytest.param(CompressionType.GZIP, 8, False, id="gzip"),
    pytest.param(CompressionType.LZ4, 8, False, id="lz4"),
    pytest.param(CompressionType.ZSTD, 8, False, id="zstd-streamed"),
    pytest.param(CompressionType.ZSTD, 8, True, id="zstd-content-size"),
])
def test_output_exactly_at_the_limit_decompresses_and_one_byte_less_refuses(codec, inflated_mib,
                                                                           content_size):
    section = bomb_section(codec, inflated_mib, content_size)
    whole = decompress(codec, section, 1 << 40)
    assert decompress(codec, section, len(whole)) == whole
    with pytest.raises(DecompressedSizeError):
        decompress(codec, section, len(whole) - 1)


@pytest.mark.parametrize("codec", list(CompressionType)[1:])
def test_random_data_round_trips_within_a_tight_limit(codec):
    data = os.urandom(300_000) + bytes(300_000)
    assert decompress(codec, compress(codec, data), len(data)) == data
    with pytest.raises(DecompressedSizeError):
        decompress(codec, compress(codec, data), len(data) - 1)


def test_snappy_blocks_are_refused_by_their_stated_length():
    block = bytes(cramjam.snappy.compress_raw(bytes(4 * MIB)))
    assert decompress(CompressionType.SNAPPY, block, 4 * MIB) == bytes(4 * MIB)
    with pytest.raises(DecompressedSizeError):
        decompress(CompressionType.SNAPPY, block, 4 * MIB - 1)
    # xerial framing: 32 KiB blocks, the limit counts them all.
    framed = compress(CompressionType.SNAPPY, bytes(4 * MIB))
    with pytest.raises(DecompressedSizeError):
        decompress(CompressionType.SNAPPY, framed, 4 * MIB - 1)
    # A block that claims 4 GiB and holds 100 bytes: refused unread.
    with pytest.raises(DecompressedSizeError):
        decompress(CompressionType.SNAPPY, encode_uvarint((1 << 32) - 1) + bytes(100), LIMIT)


def test_truncated_and_corrupt_streams_still_fail_as_corrupt():
    for codec in (CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD):
        section = bomb_section(codec, 8)
        with pytest.raises(CompressionError) as raised:
            decompress(codec, section[:len(section) // 2], LIMIT)
        assert not isinstance(raised.value, DecompressedSizeError)


def test_the_default_limit_is_64_times_kafkas_default_max_message_bytes():
    assert DECOMPRESSION_FACTOR == 64
    assert DEFAULT_MAX_DECOMPRESSED_SIZE == 64 * 1048588 == max_decompressed_size(1048588)
    # A topic with a smaller max.message.bytes keeps the default; a larger one scales it.
    assert max_decompressed_size(1000) == DEFAULT_MAX_DECOMPRESSED_SIZE
    assert max_decompressed_size(10 * MIB) == 640 * MIB

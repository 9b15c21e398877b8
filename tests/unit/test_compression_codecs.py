"""kcore.protocol.compression: round trips, the exact formats Kafka writes, and
the variants other producers write (raw snappy, zstd without content size)."""

import gzip
import io
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import cramjam
import lz4.frame
import pytest
import zstandard
from aiokafka import codec as aiokafka_codec
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_python_codec

from kcore.protocol.compression import (
    GZIP_LEVEL,
    SNAPPY_XERIAL_BLOCK_SIZE,
    CompressionError,
    CompressionType,
    UnsupportedCodecError,
    codec_from_name,
    compress,
    decompress,
)

ALL_CODECS = list(CompressionType)
COMPRESSED_CODECS = [c for c in CompressionType if c != CompressionType.NONE]
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def log_lines(size: int) -> bytes:
    lines = []
    total = i = 0
    while total < size:
        line = b'{"seq": %d, "level": "INFO", "msg": "request served in %d ms"}\n' % (i, i % 97)
        lines.append(line)
        total += len(line)
        i += 1
    return b"".join(lines)[:size]


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from(ALL_CODECS), data=st.binary(max_size=70_000))
def test_every_codec_round_trips_arbitrary_bytes(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.kafka_name)
def test_round_trip_accepts_memoryview_and_bytearray(codec):
    data = log_lines(100_000)
    assert decompress(codec, memoryview(bytearray(compress(codec, memoryview(data))))) == data


@pytest.mark.parametrize("codec", COMPRESSED_CODECS, ids=lambda c: c.kafka_name)
def test_compressed_codecs_shrink_log_lines(codec):
    data = log_lines(1 << 20)
    assert len(compress(codec, data)) < len(data) // 3


def test_gzip_writes_gzip_members_at_java_default_level():
    data = log_lines(50_000)
    out = compress(CompressionType.GZIP, data)
    assert out[:2] == b"\x1f\x8b"
    assert gzip.decompress(out) == data
    assert out == zlib.compress(data, GZIP_LEVEL, 31)


def test_gzip_reads_concatenated_members_and_gzip_module_output():
    first, second = log_lines(3000), b"second member"
    joined = gzip.compress(first) + gzip.compress(second, compresslevel=1)
    assert decompress(CompressionType.GZIP, joined) == first + second
    assert decompress(CompressionType.GZIP, kafka_python_codec.gzip_encode(first)) == first


def test_snappy_writes_xerial_framing_with_32k_blocks():
    data = log_lines(100_000)
    out = compress(CompressionType.SNAPPY, data)
    assert out[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    position, blocks = 16, []
    while position < len(out):
        (length,) = struct.unpack_from(">i", out, position)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[position + 4:position + 4 + length])))
        position += 4 + length
    assert position == len(out)
    assert [len(b) for b in blocks] == [SNAPPY_XERIAL_BLOCK_SIZE] * 3 + [100_000 - 3 * 32768]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_snappy_as_librdkafka_writes_it():
    data = log_lines(80_000)
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert raw[:8] != XERIAL_MAGIC
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_snappy_reads_xerial_from_kafka_python_and_aiokafka():
    data = log_lines(90_000)
    assert decompress(CompressionType.SNAPPY, kafka_python_codec.snappy_encode(data)) == data
    assert decompress(CompressionType.SNAPPY, aiokafka_codec.snappy_encode(data)) == data
    raw = aiokafka_codec.snappy_encode(data, xerial_compatible=False)
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_snappy_ignores_little_endian_xerial_version_fields():
    data = log_lines(5000)
    framed = compress(CompressionType.SNAPPY, data)
    little_endian = framed[:8] + struct.pack("<ii", 1, 1) + framed[16:]
    assert decompress(CompressionType.SNAPPY, little_endian) == data


def test_snappy_output_is_readable_by_both_python_clients():
    data = log_lines(70_000)
    framed = compress(CompressionType.SNAPPY, data)
    assert kafka_python_codec.snappy_decode(framed) == data
    assert aiokafka_codec.snappy_decode(framed) == data


def test_lz4_writes_java_frame_flags():
    out = compress(CompressionType.LZ4, log_lines(200_000))
    assert out[:4] == b"\x04\x22\x4d\x18"  # frame magic 0x184D2204, little-endian
    flg, bd = out[4], out[5]
    assert flg >> 6 == 1                   # version 01
    assert flg & 0x20                      # independent blocks: Java rejects linked ones
    assert not flg & 0x10                  # no block checksum
    assert not flg & 0x08                  # no content size
    assert not flg & 0x04                  # no content checksum
    assert bd == 0x40                      # 64 KiB maximum block size


def test_lz4_reads_frames_with_linked_blocks_size_and_checksums():
    data = log_lines(300_000)
    frame = lz4.frame.compress(data, block_linked=True, store_size=True, content_checksum=True,
                               block_checksum=True, compression_level=9)
    assert decompress(CompressionType.LZ4, frame) == data
    assert decompress(CompressionType.LZ4, kafka_python_codec.lz4_encode(data)) == data


def test_zstd_reads_streamed_frames_without_content_size():
    data = log_lines(400_000)
    buffer = io.BytesIO()
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=False)
    with compressor.stream_writer(buffer, closefd=False) as writer:
        writer.write(data)
    frame = buffer.getvalue()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CompressionType.ZSTD, frame) == data


def test_zstd_reads_concatenated_frames():
    first, second = log_lines(10_000), b"tail frame"
    frames = zstandard.ZstdCompressor().compress(first) + zstandard.ZstdCompressor().compress(second)
    assert decompress(CompressionType.ZSTD, frames) == first + second


def test_zstd_output_records_its_content_size_and_level_3():
    data = log_lines(60_000)
    out = compress(CompressionType.ZSTD, data)
    assert zstandard.get_frame_parameters(out).content_size == len(data)
    assert out == zstandard.ZstdCompressor(level=3).compress(data)
    assert kafka_python_codec.zstd_decode(out) == data


@pytest.mark.parametrize("codec", [5, 6, 7, 8, -1])
def test_unassigned_codec_ids_raise_unsupported_codec_error(codec):
    with pytest.raises(UnsupportedCodecError, match=f"codec id {codec}"):
        compress(codec, b"data")
    with pytest.raises(UnsupportedCodecError):
        decompress(codec, b"data")


@pytest.mark.parametrize("codec", COMPRESSED_CODECS, ids=lambda c: c.kafka_name)
def test_truncated_input_raises_compression_error(codec):
    out = compress(codec, log_lines(100_000))
    with pytest.raises(CompressionError) as info:
        decompress(codec, out[: len(out) // 2])
    assert info.value.codec == codec


@pytest.mark.parametrize("codec", COMPRESSED_CODECS, ids=lambda c: c.kafka_name)
def test_empty_and_garbage_input_raise_compression_error(codec):
    for bad in (b"", b"\x00\x01garbage bytes that match no codec header\xff" * 3):
        with pytest.raises(CompressionError):
            decompress(codec, bad)


def test_codec_names_map_to_ids():
    assert [codec_from_name(n) for n in ("none", "gzip", "snappy", "lz4", "ZSTD")] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="producer"):
        codec_from_name("producer")


@pytest.mark.parametrize("codec", COMPRESSED_CODECS, ids=lambda c: c.kafka_name)
def test_threads_compress_and_decompress_concurrently(codec):
    inputs = [log_lines(20_000 + 997 * i) for i in range(16)]

    def round_trip(data):
        return decompress(codec, compress(codec, data))

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(round_trip, inputs * 4))
    assert results == inputs * 4


@pytest.mark.parametrize("codec, low, high", [
    (CompressionType.GZIP, 1, 9), (CompressionType.LZ4, 1, 12), (CompressionType.ZSTD, -5, 19)])
def test_kafka_compression_levels_trade_size_and_decode_alike(codec, low, high):
    data = b"".join(b"record-%06d:%s;" % (i, b"abcdefgh"[: i % 8] * (i % 13)) for i in range(20_000))
    fast, small = compress(codec, data, low), compress(codec, data, high)
    assert decompress(codec, fast) == decompress(codec, small) == data
    assert len(small) < len(fast)


def test_default_levels_are_kafkas():
    data = bytes(range(256)) * 200
    assert compress(CompressionType.GZIP, data, -1) == compress(CompressionType.GZIP, data)
    assert compress(CompressionType.LZ4, data, 9) == compress(CompressionType.LZ4, data)
    assert compress(CompressionType.ZSTD, data, 3) == compress(CompressionType.ZSTD, data)

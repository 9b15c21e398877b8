import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.protocol.framing import FrameReader, FrameSizeError


def feed(reader: FrameReader, stream: bytes, chunk_sizes) -> list[bytes]:
    """Push stream through get_buffer/buffer_updated as a transport would."""
    frames, position, sizes = [], 0, iter(chunk_sizes)
    while position < len(stream):
        target = reader.get_buffer()
        count = min(len(target), len(stream) - position, next(sizes, 1 << 20) or 1)
        target[:count] = stream[position:position + count]
        target.release()
        position += count
        frames += [bytes(f) for f in reader.buffer_updated(count)]
    return frames


@given(st.lists(st.binary(max_size=300), max_size=20),
       st.lists(st.integers(1, 500), max_size=50))
def test_any_chunking_yields_the_frames_in_order(bodies, chunks):
    stream = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
    assert feed(FrameReader(1 << 20, staging_bytes=128), stream, chunks) == bodies


def test_large_frame_is_received_in_its_own_buffer():
    body = os.urandom(300_000)
    reader = FrameReader(1 << 20, staging_bytes=1024)
    stream = struct.pack(">i", len(body)) + body + struct.pack(">i", 3) + b"abc"
    assert feed(reader, stream, [1000, 50_000, 250_000, 100]) == [body, b"abc"]


@pytest.mark.parametrize("size", [-1, (1 << 20) + 1])
def test_size_outside_limits_is_rejected(size):
    reader = FrameReader(1 << 20)
    target = reader.get_buffer()
    target[:4] = struct.pack(">i", size)
    target.release()
    with pytest.raises(FrameSizeError):
        reader.buffer_updated(4)

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


def test_large_frame_buffers_are_reused_only_once_nothing_refers_to_them():
    from kcore.protocol.framing import STAGING_BYTES
    reader = FrameReader(1 << 24)
    size = STAGING_BYTES * 4

    def receive(fill: int):
        frame_bytes = size.to_bytes(4, "big") + bytes([fill]) * size
        frames = []
        for start in range(0, len(frame_bytes), 65536):
            chunk = frame_bytes[start:start + 65536]
            buffer = reader.get_buffer()
            buffer[:len(chunk)] = chunk
            frames += reader.buffer_updated(len(chunk))
        [frame] = frames
        return frame

    first = receive(1)
    held = first[10:20]             # a record view still in use
    del first
    second = receive(2)
    assert bytes(held) == b"\x01" * 10  # not overwritten: a new buffer was taken
    pooled = {id(buffer) for buffer in reader._pool}
    assert len(pooled) == 2
    del held, second
    third = receive(3)
    assert id(third.obj) in pooled       # nothing referred to them any more: one is reused
    assert len(reader._pool) == 2
    assert bytes(third[:3]) == b"\x03\x03\x03" and len(third) == size

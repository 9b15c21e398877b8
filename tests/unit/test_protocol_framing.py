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


def receive_frame(reader: FrameReader, size: int, fill: int):
    frame_bytes = size.to_bytes(4, "big") + bytes([fill]) * size
    frames = []
    for start in range(0, len(frame_bytes), 65536):
        chunk = frame_bytes[start:start + 65536]
        buffer = reader.get_buffer()
        buffer[:len(chunk)] = chunk
        buffer.release()
        frames += reader.buffer_updated(len(chunk))
    [frame] = frames
    return frame


def test_large_frame_buffers_are_reused_only_once_nothing_refers_to_them():
    from kcore.protocol.framing import STAGING_BYTES
    reader = FrameReader(1 << 24)
    size = STAGING_BYTES * 4

    def receive(fill: int):
        return receive_frame(reader, size, fill)

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


def test_frames_of_mixed_sizes_reuse_the_smallest_free_buffer_that_fits():
    """librdkafka's produce requests range from ~64 KiB to ~1 MiB: a small
    frame after a large one takes the large one's buffer instead of fresh
    memory, and the pool keeps the larger buffers."""
    from kcore.protocol.framing import POOLED_FRAMES, STAGING_BYTES
    reader = FrameReader(1 << 24)
    large = receive_frame(reader, 1 << 20, 1)
    large_id = id(large.obj)  # an id: a reference would keep it from reuse
    del large
    small = receive_frame(reader, STAGING_BYTES * 2, 2)
    assert id(small.obj) == large_id and bytes(small[:2]) == b"\x02\x02"
    del small
    held = [receive_frame(reader, STAGING_BYTES * 2, 3) for _ in range(POOLED_FRAMES)]
    assert len(reader._pool) == POOLED_FRAMES
    del held
    bigger = receive_frame(reader, 2 << 20, 4)  # none fits: fresh, in place of a small one
    pooled = {id(buffer) for buffer in reader._pool}
    assert id(bigger.obj) in pooled and large_id in pooled
    assert len(reader._pool) == POOLED_FRAMES


def test_frames_above_the_pooled_size_get_memory_of_their_own():
    from kcore.protocol.framing import POOLED_FRAME_MAX_BYTES
    reader = FrameReader(POOLED_FRAME_MAX_BYTES * 2)
    frame = receive_frame(reader, POOLED_FRAME_MAX_BYTES + 1, 5)
    assert len(frame) == POOLED_FRAME_MAX_BYTES + 1 and not reader._pool

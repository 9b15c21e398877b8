"""Splitting a TCP byte stream into Kafka frames (`i32 size | body`):
requests on the broker, responses in kcore's client (a follower's fetch
responses carry megabytes of records).

Small frames are read into one reused staging buffer and copied out (a
copy of a few KiB is cheaper than a fresh allocation). A frame larger than
the staging buffer gets a buffer of its own and the rest of it is received
straight into that buffer, so a 1 MB produce request (or fetch response) is
never copied on its way in; produce then patches offsets into it in place
before the append. Fresh memory costs ~2.3 us per 4 KiB page on first touch
here (docs/performance.md#the-reference-machine), so one buffer per large
frame instead of a growing buffer, a slice and a copy of it is three times
fewer page faults too.

Not thread-safe; one per connection.
"""
from __future__ import annotations

import sys

# Staging buffer size: holds many small requests per read (metadata, fetch,
# heartbeats are < 1 KiB) while frames above it take the zero-copy path.
STAGING_BYTES = 64 * 1024
# Large-frame buffers kept for reuse per connection. A buffer is reused only
# once nothing else refers to it (the request was handled: its records were
# copied into the log, no memoryview of it is alive), so a connection with a
# few produce requests (librdkafka keeps up to 5) in flight still recycles.
# A read of 1 MiB or more often completes several frames, each handled by
# a task of its own that has not run yet: with 6 buffers, 3 frames in 10 of
# a librdkafka producer at full speed still took fresh memory.
POOLED_FRAMES = 16
# Larger frames (socket.request.max.bytes allows 100 MiB) get memory of
# their own, freed once handled; and the pool holds at most POOLED_BYTES.
POOLED_FRAME_MAX_BYTES = 16 * 1024 * 1024
POOLED_BYTES = 32 * 1024 * 1024
# sys.getrefcount of a pooled buffer that only the pool holds: the pool's
# list, the loop variable and getrefcount's own argument (every memoryview
# of it, the frame handed out included, holds one more).
_POOL_ONLY_REFS = 3


class FrameSizeError(ValueError):
    """A size prefix is negative or above the limit (the broker's
    socket.request.max.bytes)."""


class FrameReader:
    def __init__(self, max_frame_bytes: int, staging_bytes: int = STAGING_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._staging = bytearray(staging_bytes)
        self._staged = 0
        self._frame: memoryview | None = None
        self._frame_filled = 0
        self._pool: list[bytearray] = []

    def _large_frame(self, size: int) -> memoryview:
        """``size`` bytes of a buffer: the smallest pooled one that fits and
        nobody refers to any more, else a fresh one of the next power-of-two
        size, pooled in place of the smallest free one. Fresh memory costs
        ~2.3 us per 4 KiB page on first touch here
        (docs/performance.md#the-reference-machine): ~0.6 ms per MiB of
        every produce request or follower fetch that reuse saves. Reuse
        once also required a buffer at most twice the frame: with
        librdkafka's requests between 64 KiB and 1 MiB the pool churned
        and 4 frames in 5 took fresh memory (~0.3 CPU-s per GB produced)."""
        best = None
        for buffer in self._pool:
            if len(buffer) >= size and sys.getrefcount(buffer) == _POOL_ONLY_REFS \
                    and (best is None or len(buffer) < len(best)):
                best = buffer
        if best is not None:
            return memoryview(best)[:size]
        fresh = bytearray(1 << (size - 1).bit_length())
        if len(fresh) <= POOLED_FRAME_MAX_BYTES:
            self._pool_add(fresh)
        return memoryview(fresh)[:size]

    def _pool_add(self, fresh: bytearray) -> None:
        room = POOLED_BYTES - sum(map(len, self._pool)) - len(fresh)
        if len(self._pool) < POOLED_FRAMES and room >= 0:
            self._pool.append(fresh)
            return
        smallest = -1  # the smallest buffer nobody uses gives way to it
        for index in range(len(self._pool)):
            pooled = self._pool[index]
            if sys.getrefcount(pooled) == _POOL_ONLY_REFS and len(pooled) < len(fresh) \
                    and room + len(pooled) >= 0 \
                    and (smallest < 0 or len(pooled) < len(self._pool[smallest])):
                smallest = index
        if smallest >= 0:
            self._pool[smallest] = fresh

    def get_buffer(self) -> memoryview:
        """Where the transport should put the next bytes it receives."""
        if self._frame is not None:
            return self._frame[self._frame_filled:]
        return memoryview(self._staging)[self._staged:]

    def buffer_updated(self, nbytes: int) -> list[bytearray | memoryview]:
        """Account for nbytes received; returns the frames now complete."""
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled < len(self._frame):
                return []
            frame, self._frame = self._frame, None
            return [frame]
        self._staged += nbytes
        return self._split_staging()

    def _split_staging(self) -> list[bytearray | memoryview]:
        frames: list[bytearray | memoryview] = []
        staging, staged, position = self._staging, self._staged, 0
        while staged - position >= 4:
            size = int.from_bytes(staging[position:position + 4], "big", signed=True)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameSizeError(f"frame size {size} outside 0..{self.max_frame_bytes}")
            available = staged - position - 4
            if size + 4 <= len(staging):
                if available < size:
                    break
                frames.append(staging[position + 4:position + 4 + size])
                position += 4 + size
                continue
            frame = self._large_frame(size)
            have = min(available, size)
            frame[:have] = staging[position + 4:position + 4 + have]
            position += 4 + have
            if have == size:
                frames.append(frame)
                continue
            self._frame, self._frame_filled = frame, have
            break
        if position:
            remaining = staged - position
            staging[:remaining] = staging[position:staged]
            self._staged = remaining
        return frames

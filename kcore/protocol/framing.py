"""Splitting a TCP byte stream into Kafka frames (`i32 size | body`):
requests on the broker, responses in kcore's client (a follower's fetch
responses carry megabytes of records).

Small frames are read into one reused staging buffer and copied out (a
copy of a few KiB is cheaper than a fresh allocation). A frame larger than
the staging buffer gets a buffer of its own and the rest of it is received
straight into that buffer, so a 1 MB produce request (or fetch response) is
never copied on its way in; produce then patches offsets into it in place
before the append. Fresh memory costs ~2.3 us per 4 KiB page on first touch
here (PERF.md), so one buffer per large frame instead of a growing buffer,
a slice and a copy of it is three times fewer page faults too.

Not thread-safe; one per connection.
"""
from __future__ import annotations

# Staging buffer size: holds many small requests per read (metadata, fetch,
# heartbeats are < 1 KiB) while frames above it take the zero-copy path.
STAGING_BYTES = 64 * 1024


class FrameSizeError(ValueError):
    """A size prefix is negative or above the limit (the broker's
    socket.request.max.bytes)."""


class FrameReader:
    def __init__(self, max_frame_bytes: int, staging_bytes: int = STAGING_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._staging = bytearray(staging_bytes)
        self._staged = 0
        self._frame: bytearray | None = None
        self._frame_filled = 0

    def get_buffer(self) -> memoryview:
        """Where the transport should put the next bytes it receives."""
        if self._frame is not None:
            return memoryview(self._frame)[self._frame_filled:]
        return memoryview(self._staging)[self._staged:]

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """Account for nbytes received; returns the frames now complete."""
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled < len(self._frame):
                return []
            frame, self._frame = self._frame, None
            return [frame]
        self._staged += nbytes
        return self._split_staging()

    def _split_staging(self) -> list[bytearray]:
        frames: list[bytearray] = []
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
            frame = bytearray(size)
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

"""A response whose first file slice is on disk has the kernel read all of
its later slices at once (kcore/server/connection.py, _read_ahead_slices):
the send loop reads cold slices one by one, and a consumer catching up on
many partitions would otherwise keep one read in flight at a time."""
from __future__ import annotations

import asyncio
import os
import socket
import time

from kcore.log.file_slice import FileSlice
from kcore.metrics.socket_server import SocketServerStats
from kcore.server.connection import COLD_PROBE_BYTES, KafkaConnection, _cached, _read_ahead_slices

FIRST_BYTES = 4 * 1024 * 1024  # read in 16 worker reads, one after the other
LATER_BYTES = 512 * 1024  # one read-ahead, started before the first of those


def _on_disk(path, size: int) -> int:
    """``path`` holding ``size`` random bytes, none of them cached; its fd."""
    path.write_bytes(os.urandom(size))
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)  # clean pages: DONTNEED drops them
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    assert not _cached(fd, 0, size)
    return fd


async def _dispatch(context, request):
    raise AssertionError("no request is sent in this test")


async def _send(chunks: list, stats: SocketServerStats) -> bytes:
    """The chunks through a real connection's send path; what arrived."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    _, connection = await loop.connect_accepted_socket(
        lambda: KafkaConnection(_dispatch, "PLAINTEXT", 1 << 20, 1, lambda _: None, socket_stats=stats), ours)
    expected = sum(len(c) if isinstance(c, bytes) else c.size for c in chunks)
    received = bytearray()

    async def drain() -> None:
        while len(received) < expected:
            received.extend(await loop.sock_recv(theirs, 1 << 20))

    reader = asyncio.ensure_future(drain())
    await connection._write_chunks(chunks)
    await asyncio.wait_for(reader, 30)
    connection.close()
    theirs.close()
    return bytes(received)


def test_the_later_slices_of_a_cold_response_are_read_ahead(tmp_path):
    first, later = (_on_disk(tmp_path / f"{n:020d}.log", size)
                    for n, size in ((0, FIRST_BYTES), (1, LATER_BYTES)))
    stats = SocketServerStats()
    try:
        received = asyncio.run(_send([b"header", FileSlice(first, 0, FIRST_BYTES),
                                      FileSlice(later, 0, LATER_BYTES)], stats))
        assert len(received) == len(b"header") + FIRST_BYTES + LATER_BYTES
        assert received[-LATER_BYTES:] == os.pread(later, LATER_BYTES, 0)
        # The first slice went through the worker threads; the later one was
        # cached by the time its turn came (without the read-ahead it is
        # read cold too: FIRST_BYTES + LATER_BYTES).
        assert stats.cold_bytes == FIRST_BYTES, stats.cold_bytes
    finally:
        os.close(first)
        os.close(later)


def test_a_read_ahead_caches_the_slices_and_skips_a_closed_file(tmp_path):
    fd = _on_disk(tmp_path / "00000000000000000000.log", COLD_PROBE_BYTES * 8)
    closed = os.open(tmp_path / "00000000000000000000.log", os.O_RDONLY)
    os.close(closed)
    try:
        _read_ahead_slices([b"header", FileSlice(closed, 0, 4096), FileSlice(fd, 0, COLD_PROBE_BYTES * 8)])
        deadline = time.monotonic() + 10  # the read-ahead's I/O lands in the background
        while not _cached(fd, 0, COLD_PROBE_BYTES * 8) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _cached(fd, 0, COLD_PROBE_BYTES * 8)
    finally:
        os.close(fd)

"""Small file slices of a response are read into memory so the response
leaves in one write; large ones stay slices for sendfile; a slice the
file no longer holds whole stays a slice (the sendfile path then closes
the connection, as for any segment truncated under a fetch)."""
from __future__ import annotations

import os

from kcore.log.file_slice import FileSlice
from kcore.server.connection import INLINE_SLICE_BYTES, _in_memory, _inline_small_slices


def test_small_slices_are_read_and_large_ones_kept(tmp_path):
    data = os.urandom(INLINE_SLICE_BYTES * 3)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        small = FileSlice(fd, 100, 4096)
        largest_inlined = FileSlice(fd, 0, INLINE_SLICE_BYTES)
        large = FileSlice(fd, 0, INLINE_SLICE_BYTES + 1)
        past_end = FileSlice(fd, len(data) - 10, 20)
        chunks = _inline_small_slices([b"header", small, largest_inlined, large, past_end])
        assert chunks == [b"header", data[100:4196], data[:INLINE_SLICE_BYTES], large, past_end]
    finally:
        os.close(fd)


def test_a_response_joins_the_write_only_when_all_of_it_is_in_memory(tmp_path):
    """A queued response rides along in one write when every slice is
    small; one with a slice for sendfile is left whole, with nothing read
    (a closed descriptor shows it: reading it would raise EBADF)."""
    data = os.urandom(INLINE_SLICE_BYTES * 2)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _in_memory([b"header", FileSlice(fd, 8, 100)]) == [b"header", data[8:108]]
        assert _in_memory([b"header", FileSlice(fd, len(data) - 10, 20)]) is None  # a short read
    finally:
        os.close(fd)
    large = FileSlice(fd, 0, INLINE_SLICE_BYTES + 1)
    assert _in_memory([b"header", FileSlice(fd, 0, 100), large]) is None


def test_cold_pages_are_told_from_cached_ones(tmp_path):
    """A slice whose pages the kernel dropped is cold (read by a worker
    thread, not sent by sendfile from the event loop); once read, cached."""
    from kcore.server.connection import COLD_PROBE_BYTES, _cached
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(COLD_PROBE_BYTES * 8))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # clean pages: DONTNEED drops them
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert not _cached(fd, 0, COLD_PROBE_BYTES * 8)
        os.pread(fd, COLD_PROBE_BYTES * 2, 0)  # the first two probes' pages, and readahead's
        os.posix_fadvise(fd, COLD_PROBE_BYTES * 4, 0, os.POSIX_FADV_DONTNEED)
        assert _cached(fd, 0, COLD_PROBE_BYTES * 2)
        assert not _cached(fd, 0, COLD_PROBE_BYTES * 8)  # the tail is still on disk
    finally:
        os.close(fd)

"""Helpers for tests of the partition log: reading back slices, failing
fsyncs, batches whose bytes say their offset."""
from __future__ import annotations

import contextlib
import os

from kcore._native import records as native_records
from kcore.log.log import Log
from tests.support.batches import build_batch


@contextlib.contextmanager
def segment_fd_on_a_pipe(segment):
    """While open, ``segment``'s fd is a pipe, so the next fsync round of it
    fails with the kernel's own error (fdatasync of a pipe: EINVAL). Rounds
    dup the fd when they start, so waiting inside the block is enough."""
    real_fd = segment.fd
    read_end, write_end = os.pipe()
    segment.fd = write_end
    try:
        yield
    finally:
        segment.fd = real_fd
        os.close(read_end)
        os.close(write_end)


def read_slices(slices) -> bytes:
    return b"".join(os.pread(s.fd, s.size, s.position) for s in slices)


def batch_for(offset: int, value_bytes: int = 200) -> bytearray:
    """The batch written at ``offset``: its content says where it belongs."""
    return build_batch([bytes([offset % 251]) * value_bytes], base_timestamp=1000 + offset)


def read_all(log: Log) -> bytes:
    slices = log.read(log.log_start_offset, 1 << 30) if log.log_end_offset > log.log_start_offset else []
    return b"".join(os.pread(s.fd, s.size, s.position) for s in slices)


def assert_prefix_of_written_batches(log: Log, first_offset: int = 0) -> None:
    """Every stored batch is valid, consecutive from first_offset, and holds
    what was written for its offset."""
    data = read_all(log)
    infos = native_records.validate_batches(data)
    assert [info.base_offset for info in infos] == list(range(first_offset, first_offset + len(infos)))
    for info in infos:
        assert data[info.position + info.size_in_bytes - 2] == info.base_offset % 251
    assert log.log_end_offset == first_offset + len(infos)

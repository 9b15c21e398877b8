"""Shared fixtures for the unit tests of native kernels and the log."""
from __future__ import annotations

import contextlib
import os

import hypothesis
import pytest

from kcore.log.config import LogConfig
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


# Bounded property tests: the machine is shared, each file stays under ~30 s.
hypothesis.settings.register_profile("kcore", max_examples=200, deadline=None)
hypothesis.settings.load_profile("kcore")


def make_batch(records: int = 1, value_bytes: int = 10, timestamp: int = 1_000, **kwargs) -> bytearray:
    """A valid uncompressed v2 batch of ``records`` values of ``value_bytes``."""
    deltas = kwargs.pop("timestamp_deltas", [0] * records)
    return build_batch([bytes([65 + i % 26]) * value_bytes for i in range(records)],
                                 base_timestamp=timestamp, timestamp_deltas=deltas, **kwargs)


def read_slices(slices) -> bytes:
    return b"".join(os.pread(s.fd, s.size, s.position) for s in slices)


@pytest.fixture
def batch():
    return make_batch


@pytest.fixture
def read_back():
    return read_slices


@pytest.fixture
def open_log(tmp_path):
    """open_log(name='topic-0', clean_shutdown=False, **config) -> Log,
    closed at teardown."""
    opened: list[Log] = []

    def factory(name: str = "topic-0", *, recovery_point: int = 0, log_start_offset: int = 0,
                clean_shutdown: bool = False, **config) -> Log:
        log = Log.open(tmp_path / name, LogConfig(**config), recovery_point=recovery_point,
                       log_start_offset=log_start_offset, clean_shutdown=clean_shutdown)
        opened.append(log)
        return log

    yield factory
    for log in opened:
        if log.active_segment.fd >= 0:
            log.close()

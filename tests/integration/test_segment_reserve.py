"""Blocks reserved ahead of the appends (``LogSegment._reserve``): they
never show in the file's length, the roll and the close give them back, a
crash leaves the log as it was, and a full disk only stops the reserving."""
from __future__ import annotations

import errno
import os

import pytest

from kcore._native import append as native_append
from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.log import assert_prefix_of_written_batches, batch_for
from tests.support.tmpfs import fill, mounted_tmpfs

VALUE_BYTES = 100_000  # one append of ~100 KB reserves 1 MiB ahead (16 appends, at most 1 MiB)
SLACK = 64 << 10  # what a file system may round a trimmed file up to


def allocated(path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.fixture
def log_dir(tmp_path):
    probe = tmp_path / "probe"
    fd = os.open(probe, os.O_CREAT | os.O_RDWR)
    try:
        code = native_append.reserve_space(fd, 0, 4096)
    finally:
        os.close(fd)
    # Only a file system without fallocate (EOPNOTSUPP: NFSv3, ZFS before
    # 2.2, some FUSE mounts) has no reserve to check: there it is a no-op
    # and the appends allocate as they go. Any other failure is one.
    if code == errno.EOPNOTSUPP:
        pytest.skip(f"{tmp_path} is on a file system without fallocate (EOPNOTSUPP): "
                    "the block reserve is a no-op there")
    assert code == 0, os.strerror(code)
    return tmp_path / "t-0"


def test_an_append_reserves_blocks_past_the_data_and_the_length_stays_the_data(log_dir):
    log = Log.open(log_dir, LogConfig())
    log.append(batch_for(0, VALUE_BYTES), 0)
    segment = log.active_segment
    assert os.fstat(segment.fd).st_size == segment.size
    assert allocated(segment.log_path) >= segment.size + 2 * VALUE_BYTES
    log.close()


def test_a_mid_size_append_reserves_many_appends_ahead(log_dir):
    # A fallocate costs the same at 64 KiB and 1 MiB: a 20 KB append (a
    # producer's batch at 50k msg/s) reserves room for 16 such appends.
    log = Log.open(log_dir, LogConfig())
    log.append(batch_for(0, 20_000), 0)
    segment = log.active_segment
    assert allocated(segment.log_path) >= segment.size + 12 * 20_000
    log.close()


def test_the_roll_and_the_close_give_the_reserved_blocks_back(log_dir):
    log = Log.open(log_dir, LogConfig())
    log.append(batch_for(0, VALUE_BYTES), 0)
    first = log.active_segment
    log.roll()
    assert allocated(first.log_path) < first.size + SLACK
    log.append(batch_for(1, VALUE_BYTES), 0)
    second = log.active_segment
    assert allocated(second.log_path) >= second.size + 2 * VALUE_BYTES
    log.close()
    assert allocated(second.log_path) < second.size + SLACK
    assert os.stat(second.log_path).st_size == second.size


def test_after_a_crash_the_reserved_blocks_are_no_data(log_dir):
    log = Log.open(log_dir, LogConfig())
    for offset in range(3):
        log.append(batch_for(offset, VALUE_BYTES), 0)
    log.flush()  # then the process dies: no roll, no close
    reopened = Log.open(log_dir, LogConfig(), recovery_point=0)
    assert reopened.log_end_offset == 3
    assert_prefix_of_written_batches(reopened)
    assert reopened.append(batch_for(3, VALUE_BYTES), 0).first_offset == 3
    assert_prefix_of_written_batches(reopened)
    reopened.close()
    log.close()


def test_a_disk_too_full_to_reserve_still_takes_the_appends_that_fit(tmp_path):
    with mounted_tmpfs(tmp_path / "fs", "2m") as fs:
        log = Log.open(fs / "t-0", LogConfig())
        filler = fill(fs, leave_bytes=48 << 10)
        for offset in range(2):  # 2 x ~20 KB: room for them, not for 320 KB more
            assert log.append(batch_for(offset, 20_000), 0).first_offset == offset
        segment = log.active_segment
        assert os.fstat(segment.fd).st_size == segment.size
        assert allocated(segment.log_path) < segment.size + (16 << 10)  # the 320 KB reserve failed
        assert_prefix_of_written_batches(log)
        filler.unlink()
        log.close()

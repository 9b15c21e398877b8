"""The partition log on a really full file system (a small tmpfs): a write
that fails with ENOSPC is cut back to the last whole batch and reported as
KAFKA_STORAGE_ERROR; nothing half-written stays for later appends to build
on, and appends resume once space returns. ``mounted_tmpfs`` and ``fill``
serve the other disk-full tests too."""
from __future__ import annotations

import os

import pytest

from kcore.log.config import LogConfig
from kcore.log.errors import KafkaStorageError
from kcore.log.log import Log
from tests.support.log import assert_prefix_of_written_batches, batch_for
from tests.support.tmpfs import fill, mounted_tmpfs

VALUE_BYTES = 20_000  # ~5 pages per batch: the failing write is a partial one


@pytest.fixture
def small_fs(tmp_path):
    with mounted_tmpfs(tmp_path / "fs", "2m") as path:
        yield path


def test_enospc_mid_batch_leaves_only_whole_batches_and_appends_resume(small_fs):
    log = Log.open(small_fs / "t-0", LogConfig(segment_bytes=64 << 20))
    filler = fill(small_fs, leave_bytes=200_000)
    appended = 0
    with pytest.raises(KafkaStorageError, match="No space left") as failure:
        for offset in range(100):
            log.append(batch_for(offset, VALUE_BYTES), 0)
            appended += 1
    assert failure.value.error_code == 56
    assert 0 < appended < 100
    segment = log.active_segment
    assert os.fstat(segment.fd).st_size == segment.size  # nothing past the last whole batch
    assert log.log_end_offset == appended
    assert_prefix_of_written_batches(log)
    with pytest.raises(KafkaStorageError):
        log.append(batch_for(appended, VALUE_BYTES), 0)  # still full: the same answer
    assert log.log_end_offset == appended
    filler.unlink()
    for offset in range(appended, appended + 3):
        assert log.append(batch_for(offset, VALUE_BYTES), 0).first_offset == offset
    assert_prefix_of_written_batches(log)
    log.close()
    reopened = Log.open(small_fs / "t-0", LogConfig(segment_bytes=64 << 20), recovery_point=0)
    assert reopened.log_end_offset == appended + 3
    assert_prefix_of_written_batches(reopened)
    reopened.close()


def test_a_roll_that_cannot_preallocate_leaves_nothing_behind_and_the_next_roll_works(small_fs):
    config = LogConfig(segment_bytes=512 << 10, preallocate=True, segment_index_bytes=4096)
    log = Log.open(small_fs / "t-0", config)
    log.append(batch_for(0, VALUE_BYTES), 0)
    # Trimming the old segment frees ~490 KiB: short of a new 512 KiB one.
    filler = fill(small_fs, leave_bytes=16 << 10)
    with pytest.raises(KafkaStorageError, match="No space left"):
        log.roll()
    # The failed segment's files are gone, so the base offset is free again.
    assert sorted(p.name for p in (small_fs / "t-0").iterdir() if p.suffix in (".log", ".index")) == \
        ["00000000000000000000.index", "00000000000000000000.log"]
    filler.unlink()
    assert log.roll().base_offset == 1
    assert log.append(batch_for(1, VALUE_BYTES), 0).first_offset == 1
    assert_prefix_of_written_batches(log)
    log.close()

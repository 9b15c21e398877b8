"""Recovery after a crash starts at the recovery point: the state and the
index entries it rebuilds equal those of a full check from the segment's
first byte (Kafka's recovery, the oracle), and it reads only what lies
past the last trusted index entry."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kcore.log import index_file
from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.batches import make_batch
from tests.support.log import assert_prefix_of_written_batches, batch_for


def crash(log: Log) -> None:
    """Drop the log as SIGKILL would: files closed, nothing synced."""
    for segment in log.segments:
        os.close(segment.fd)


def write_flushed(directory: Path, config: LogConfig, flushed: int, unflushed: int = 0) -> Log:
    """A log of ``flushed`` batches fsynced (the recovery point) and
    ``unflushed`` more appended after."""
    log = Log.open(directory, config)
    for offset in range(flushed + unflushed):
        if offset == flushed:
            log.flush()
        log.append(batch_for(offset), 0)
    if not unflushed:
        log.flush()
    return log


def segment_state(log: Log) -> tuple:
    segment = log.active_segment
    return (log.log_end_offset, segment.size, segment.next_offset, segment.max_timestamp,
            segment.offset_of_max_timestamp, segment.bytes_since_last_index_entry,
            bytes(segment.offset_index.buffer[:segment.offset_index.size_in_bytes]),
            bytes(segment.time_index.buffer[:segment.time_index.size_in_bytes]))


@given(specs=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 700), st.integers(0, 5000)),
                      min_size=1, max_size=40),
       flushed=st.integers(0, 40), interval=st.sampled_from([1, 300, 2000]),
       tear=st.integers(0, 400))
def test_recovery_from_the_recovery_point_equals_a_full_recovery(
        tmp_path_factory, specs, flushed, interval, tear):
    root = tmp_path_factory.mktemp("recovery")
    config = LogConfig(index_interval_bytes=interval)
    log = Log.open(root / "full" / "t-0", config)
    flushed_size = 0
    for i, (records, value_bytes, timestamp) in enumerate(specs):
        log.append(make_batch(records, value_bytes, timestamp), 0)
        if i + 1 == flushed:
            log.flush()
            flushed_size = log.active_segment.size
    recovery_point = log.recovery_point
    path = log.active_segment.log_path
    crash(log)
    with open(path, "r+b") as f:  # a torn last write, never into what was fsynced
        f.truncate(max(os.path.getsize(path) - tear, flushed_size))
    shutil.copytree(root / "full", root / "resumed")
    full = Log.open(root / "full" / "t-0", config, recovery_point=0)
    resumed = Log.open(root / "resumed" / "t-0", config, recovery_point=recovery_point)
    assert segment_state(resumed) == segment_state(full)
    full.close()
    resumed.close()


def test_recovery_starts_at_the_last_index_entry_below_the_recovery_point(tmp_path):
    config = LogConfig(index_interval_bytes=1000)
    log = write_flushed(tmp_path / "t-0", config, 30, 10)
    entry_position = log.active_segment.offset_index.lookup(29)[1]
    crash(log)
    recovered = Log.open(tmp_path / "t-0", config, recovery_point=30)
    segment = recovered.active_segment
    assert entry_position > 0
    # The resumed check began at that entry's batch: what follows was re-read.
    assert segment.recover(30).start_position == entry_position
    assert recovered.log_end_offset == 40
    assert_prefix_of_written_batches(recovered)
    recovered.close()


def test_a_torn_batch_past_the_recovery_point_is_cut(tmp_path):
    config = LogConfig(index_interval_bytes=500)
    log = write_flushed(tmp_path / "t-0", config, 20, 5)
    path = log.active_segment.log_path
    crash(log)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 30)
    recovered = Log.open(tmp_path / "t-0", config, recovery_point=20)
    assert recovered.log_end_offset == 24
    assert_prefix_of_written_batches(recovered)
    assert recovered.append(batch_for(24), 0).first_offset == 24
    recovered.close()


def test_an_index_entry_the_data_does_not_confirm_is_not_trusted(tmp_path):
    config = LogConfig(index_interval_bytes=300)
    log = write_flushed(tmp_path / "t-0", config, 20)
    index_path = log.active_segment.offset_index.path
    crash(log)
    data = bytearray(index_path.read_bytes())
    data[-4:] = (int.from_bytes(data[-4:], "big") + 7).to_bytes(4, "big")  # not a boundary
    index_path.write_bytes(bytes(data))
    recovered = Log.open(tmp_path / "t-0", config, recovery_point=20)
    assert recovered.active_segment.recover(20).start_position < int.from_bytes(data[-4:], "big")
    assert_prefix_of_written_batches(recovered)
    assert recovered.active_segment.offset_index.size_in_bytes == len(data)
    recovered.close()


def test_partitions_with_nothing_past_their_recovery_point_cost_no_file_resizing(
        tmp_path, monkeypatch):
    config = LogConfig()
    for i in range(20):
        crash(write_flushed(tmp_path / f"t-{i}", config, i % 3))
    resized: list[int] = []
    real_ftruncate = os.ftruncate
    monkeypatch.setattr(index_file.os, "ftruncate", lambda fd, n: resized.append(n) or real_ftruncate(fd, n))
    logs = [Log.open(tmp_path / f"t-{i}", config, recovery_point=i % 3) for i in range(20)]
    assert resized == []
    for i, log in enumerate(logs):
        assert log.log_end_offset == i % 3
        log.close()


def test_a_preallocated_index_left_by_a_crash_is_read_without_its_zero_tail(tmp_path, monkeypatch):
    """Kafka (and kcore before) preallocated the active index: after a crash
    the file is 10 MiB of which a few slots are entries."""
    config = LogConfig(index_interval_bytes=200)
    log = write_flushed(tmp_path / "t-0", config, 12)
    index_path: Path = log.active_segment.offset_index.path
    entries = index_path.read_bytes()
    crash(log)
    with open(index_path, "r+b") as f:
        f.truncate(10 << 20)
    reads: list[int] = []
    real_pread = os.pread
    monkeypatch.setattr(index_file.os, "pread", lambda fd, n, at: reads.append(n) or real_pread(fd, n, at))
    recovered = Log.open(tmp_path / "t-0", config, recovery_point=12)
    index = recovered.active_segment.offset_index
    assert bytes(index.buffer[:index.size_in_bytes]) == entries
    assert len(reads) <= 2 * 24 and sum(reads) < 1000  # a binary search, not 10 MiB
    recovered.close()
    assert os.path.getsize(index_path) == len(entries)  # the close wrote the entries only

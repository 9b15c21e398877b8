"""LogManager: loading, checkpoints, clean shutdown marker, deletion."""
from __future__ import annotations

import asyncio
import os
import threading

import pytest

from kcore.log.checkpoints import OffsetCheckpointFile
from kcore.log.errors import KafkaStorageError
from kcore.log.manager import LogManager
from tests.support.batches import make_batch


def test_shutdown_writes_checkpoints_and_clean_marker_then_restart_trusts_them(tmp_path):
    manager = LogManager([tmp_path], {"segment.bytes": 10_000})
    log = manager.get_or_create_log("orders", 2)
    for _ in range(5):
        log.append(make_batch(2), 0)
    log.maybe_increment_log_start_offset(3)
    manager.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read() == {("orders", 2): 10}
    assert OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint").read() == {("orders", 2): 3}

    restarted = LogManager([tmp_path], {"segment.bytes": 10_000})
    log = restarted.get_log("orders", 2)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (3, 10, 10)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert log.append(make_batch(1), 0).first_offset == 10
    restarted.shutdown()


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(tmp_path):
    manager = LogManager([tmp_path], {"segment.bytes": 300})
    log = manager.get_or_create_log("t", 0)
    for _ in range(6):
        log.append(make_batch(1, value_bytes=100), 0)
    manager.flush_dirty_logs()  # rolled segments are flushed and checkpointed
    assert log.recovery_point == log.active_segment.base_offset
    log.append(make_batch(1, value_bytes=100), 0)
    recovery = log.recovery_point
    with open(log.active_segment.log_path, "ab") as f:
        f.write(b"\x00" * 30)  # torn tail, then "crash": no shutdown
    manager._close_all()

    restarted = LogManager([tmp_path], {"segment.bytes": 300})
    log = restarted.get_log("t", 0)
    assert log.log_end_offset == 7 and log.recovery_point == recovery
    assert log.active_segment.size == os.path.getsize(log.active_segment.log_path)
    restarted.shutdown()


def test_log_dir_is_locked_against_a_second_manager(tmp_path):
    manager = LogManager([tmp_path])
    with pytest.raises(KafkaStorageError, match="locked"):
        LogManager([tmp_path])
    manager.shutdown()
    LogManager([tmp_path]).shutdown()


def test_new_partitions_spread_over_log_dirs(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs)
    for partition in range(4):
        manager.get_or_create_log("spread", partition)
    assert sorted(p.name for p in dirs[0].iterdir() if p.is_dir()) == ["spread-0", "spread-2"]
    assert sorted(p.name for p in dirs[1].iterdir() if p.is_dir()) == ["spread-1", "spread-3"]
    manager.shutdown()
    restarted = LogManager(dirs)
    assert sorted(restarted.logs) == [("spread", p) for p in range(4)]
    restarted.shutdown()


def test_configs_apply_to_new_and_existing_logs(tmp_path):
    manager = LogManager([tmp_path], {"retention.ms": 1000})
    log = manager.get_or_create_log("c", 0, {"segment.bytes": 5000, "retention.ms": 5})
    assert (log.config.segment_bytes, log.config.retention_ms) == (5000, 5)
    manager.update_config("c", 0, {"segment.bytes": 6000})
    assert (log.config.segment_bytes, log.config.retention_ms) == (6000, 1000)
    assert manager.get_or_create_log("c", 0) is log
    manager.shutdown()


def test_delete_log_removes_the_partition_directory(tmp_path):
    manager = LogManager([tmp_path])
    log = manager.get_or_create_log("gone", 0)
    log.append(make_batch(1), 0)
    assert manager.delete_log("gone", 0)
    assert not (tmp_path / "gone-0").exists()
    assert not manager.delete_log("gone", 0)
    manager.shutdown()


def test_interrupted_partition_deletion_finishes_at_start(tmp_path):
    leftover = tmp_path / "old-0.abc-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x")
    LogManager([tmp_path]).shutdown()
    assert not leftover.exists()


def test_cleanup_logs_applies_retention_and_checkpoints_log_start(tmp_path):
    one = len(make_batch(1, value_bytes=100))
    manager = LogManager([tmp_path], {"segment.bytes": 2 * one, "retention.bytes": 2 * one,
                                      "retention.ms": -1, "file.delete.delay.ms": 0})
    log = manager.get_or_create_log("r", 0)
    for _ in range(6):
        log.append(make_batch(1, value_bytes=100), 0)
    assert manager.cleanup_logs() == 2
    assert OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint").read() == {("r", 0): 4}
    manager.shutdown()


def test_corrupt_checkpoint_falls_back_to_full_recovery(tmp_path):
    manager = LogManager([tmp_path])
    log = manager.get_or_create_log("k", 0)
    log.append(make_batch(3), 0)
    manager.shutdown()
    (tmp_path / ".kafka_cleanshutdown").unlink()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage")
    restarted = LogManager([tmp_path])
    assert restarted.get_log("k", 0).log_end_offset == 3
    restarted.shutdown()


def crash_with_unflushed_data(tmp_path, partitions: int) -> dict:
    """Partitions with flushed and unflushed batches (some torn), left as a
    crash leaves them; returns each one's expected log end offset."""
    manager = LogManager([tmp_path], {"segment.bytes": 2_000})
    expected = {}
    for index in range(partitions):
        log = manager.get_or_create_log("t", index)
        for i in range(index % 7 * 3):
            log.append(make_batch(1, value_bytes=150), 0)
            if i == index % 5:
                manager.flush_dirty_logs()
                log.flush()
        expected[("t", index)] = log.log_end_offset
        if index % 4 == 1 and log.log_end_offset > log.recovery_point:
            with open(log.active_segment.log_path, "r+b") as f:
                f.truncate(log.active_segment.size - 20)
            expected[("t", index)] -= 1
    manager.checkpoint_recovery_points()
    manager._close_all()
    return expected


@pytest.mark.parametrize("threads", [1, 4])
def test_recovery_on_several_threads_opens_every_log_as_one_thread_does(tmp_path, threads):
    expected = crash_with_unflushed_data(tmp_path, 30)
    manager = LogManager([tmp_path], {"segment.bytes": 2_000}, recovery_threads_per_data_dir=threads)
    assert {key: log.log_end_offset for key, log in manager.logs.items()} == expected
    for log in manager.logs.values():
        assert log.append(make_batch(1), 0).first_offset == expected[(log.topic, log.partition)]
    manager.shutdown()


def test_a_log_that_fails_to_open_closes_the_others_and_releases_the_dir(tmp_path):
    crash_with_unflushed_data(tmp_path, 12)
    segment = tmp_path / "t-3" / f"{0:020d}.log"
    segment.unlink()
    segment.mkdir()  # a directory where a segment file should be
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(KafkaStorageError):
        LogManager([tmp_path], recovery_threads_per_data_dir=3)
    assert len(os.listdir("/proc/self/fd")) == fds


def test_a_truncation_rewrites_the_recovery_point_checkpoint_at_once(tmp_path):
    manager = LogManager([tmp_path])
    log = manager.get_or_create_log("t", 0)
    for _ in range(10):
        log.append(make_batch(1), 0)
    log.flush()
    manager.checkpoint_recovery_points()
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    assert OffsetCheckpointFile(checkpoint).read() == {("t", 0): 10}
    log.truncate_to(6)
    assert OffsetCheckpointFile(checkpoint).read() == {("t", 0): 6}
    log.truncate_fully_and_start_at(2)
    assert OffsetCheckpointFile(checkpoint).read() == {("t", 0): 2}
    manager.shutdown()


def test_truncations_in_one_loop_turn_rewrite_the_checkpoint_once(tmp_path, monkeypatch):
    import asyncio
    manager = LogManager([tmp_path])
    logs = [manager.get_or_create_log("t", i) for i in range(20)]
    for log in logs:
        for _ in range(5):
            log.append(make_batch(1), 0)
        log.flush()
    writes = []
    real_write = OffsetCheckpointFile.write
    monkeypatch.setattr(OffsetCheckpointFile, "write",
                        lambda self, offsets: writes.append(dict(offsets)) or real_write(self, offsets))

    async def follower_truncates_everything():
        for log in logs:
            log.truncate_to(2)
        assert writes == []  # not yet: before the loop's next turn, nothing appends
        await asyncio.sleep(0)
        return list(writes)

    assert asyncio.run(follower_truncates_everything()) == [{("t", i): 2 for i in range(20)}]
    manager.shutdown()


def test_a_moved_log_start_offset_is_checkpointed_at_once_and_survives_a_crash(tmp_path):
    manager = LogManager([tmp_path], {"segment.bytes": 10_000})
    log = manager.get_or_create_log("d", 0)
    for _ in range(10):
        log.append(make_batch(1), 0)
    log.flush()
    assert log.maybe_increment_log_start_offset(7)
    checkpoint = tmp_path / "log-start-offset-checkpoint"
    assert OffsetCheckpointFile(checkpoint).read() == {("d", 0): 7}
    manager._close_all()  # a crash: no clean shutdown, no final checkpoints
    restarted = LogManager([tmp_path], {"segment.bytes": 10_000})
    reopened = restarted.get_log("d", 0)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (7, 10)
    assert reopened.read(7, 10_000) and reopened.offset_for_timestamp(0)[0] == 7
    restarted.shutdown()


def test_rolled_segments_are_written_back_by_a_worker_before_the_flush_on_the_loop(tmp_path, monkeypatch):
    """write_back_dirty_logs (the broker's flush timer): the rolled
    segments' files are fdatasynced on a worker thread first, then the
    usual pass on the event loop moves the recovery point and checkpoints
    it. The syncs are the real ones, recorded on the way through."""
    manager = LogManager([tmp_path], {"segment.bytes": 300})
    log = manager.get_or_create_log("t", 0)
    for _ in range(6):
        log.append(make_batch(1, value_bytes=100), 0)
    rolled = [segment.fd for segment in log._segments[:-1]]
    assert rolled and log.unflushed_fds(log.active_segment.base_offset) == rolled
    synced: list[tuple[int, bool]] = []
    real_fdatasync = os.fdatasync

    def recording(fd: int) -> None:
        synced.append((fd, threading.current_thread() is threading.main_thread()))
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", recording)
    asyncio.run(manager.write_back_dirty_logs())
    monkeypatch.setattr(os, "fdatasync", real_fdatasync)

    on_worker = [fd for fd, on_loop in synced if not on_loop]
    first_on_loop = next(i for i, (_fd, on_loop) in enumerate(synced) if on_loop)
    assert on_worker == rolled and synced[:len(rolled)] == [(fd, False) for fd in rolled]
    assert first_on_loop == len(rolled)  # the loop's pass comes after the worker's
    assert log.recovery_point == log.active_segment.base_offset
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read() == {
        ("t", 0): log.recovery_point}
    assert log.unflushed_fds(log.active_segment.base_offset) == []
    manager.shutdown()

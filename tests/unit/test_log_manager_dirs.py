"""LogManager with several log dirs (JBOD): where new partitions go, future
logs and their swap (also cut by a crash), and a log dir that fails while
the others go on. Real directories; a failed dir is made by replacing it
with a file or removing it, as an unmounted or broken disk looks."""
from __future__ import annotations

import os
import shutil

import pytest

from kcore.log.checkpoints import OffsetCheckpointFile
from kcore.log.errors import KafkaStorageError
from kcore.log.log import Log
from kcore.log.manager import LogManager
from tests.support.batches import make_batch


def dirs_of(tmp_path, count=3):
    return [tmp_path / name for name in "abcdef"[:count]]


def names_in(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_dir())


def fill(log: Log, batches: int, epoch: int = 0) -> None:
    for _ in range(batches):
        log.append(make_batch(2, value_bytes=50), epoch)


def copy_into(source: Log, target: Log) -> None:
    """What the replication layer's mover does, in one go: from the first
    whole batch at the target's end (or the source's start)."""
    for piece in source.read(max(target.log_end_offset, source.log_start_offset), 1 << 30):
        data = bytearray(os.pread(piece.fd, piece.size, piece.position))
        base_offset = int.from_bytes(data[:8], "big")
        if base_offset < target.log_end_offset:
            target.truncate_fully_and_start_at(base_offset)
        target.append(data, -1, assign_offsets=False)


def test_new_partitions_go_to_the_online_dir_holding_fewest_logs(tmp_path):
    a, b, c = dirs_of(tmp_path)
    manager = LogManager([a, b, c])
    for index in range(2):
        manager.get_or_create_log("early", index)  # a and b hold one each
    manager.create_future_log("early", 0, c)       # a future log counts too
    assert manager.next_log_dirs() == [a, b, c]
    manager.get_or_create_log("late", 0)
    assert names_in(a) == ["early-0", "late-0"]
    manager.handle_log_dir_failure(b, "test")
    assert manager.next_log_dirs() == [c, a]
    manager.get_or_create_log("late", 1)
    assert "late-1" in names_in(c)
    manager.shutdown()


def test_paths_are_absolute_and_a_dir_named_twice_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manager = LogManager(["rel"])
    assert manager.log_dirs == [tmp_path / "rel"]
    assert manager.dirs.find(str(tmp_path / "rel")) == tmp_path / "rel"
    assert manager.dirs.find("rel") is None and manager.dirs.find(str(tmp_path / "other")) is None
    manager.shutdown()
    with pytest.raises(ValueError, match="twice"):
        LogManager([tmp_path / "x", tmp_path / "x"])


def test_a_preferred_dir_is_used_once_for_a_partition_not_created_yet(tmp_path):
    a, b, c = dirs_of(tmp_path)
    manager = LogManager([a, b, c])
    manager.maybe_update_preferred_log_dir("p", 0, c)
    assert manager.get_or_create_log("p", 0).dir == c / "p-0"
    assert manager.preferred_dirs == {}
    manager.shutdown()


def test_creation_failing_in_one_dir_reports_it_and_uses_the_next(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    shutil.rmtree(a)
    a.write_bytes(b"")  # the path is there but holds no directory: mkdir fails
    log = manager.get_or_create_log("t", 0)
    assert log.dir == b / "t-0"
    assert manager.dirs.offline.keys() == {a}
    manager.shutdown()
    assert not (b / "x").exists() and (b / ".kafka_cleanshutdown").exists()


def test_swap_keeps_offsets_start_epochs_and_producer_snapshots(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b], {"segment.bytes": 600, "file.delete.delay.ms": 60_000})
    source = manager.get_or_create_log("m", 0)
    fill(source, 3, epoch=1)
    source.leader_epoch_cache.assign(4, source.log_end_offset)  # an epoch with no batch
    fill(source, 3, epoch=5)
    source.maybe_increment_log_start_offset(3)  # inside the second batch
    (source.dir / f"{12:020d}.snapshot").write_bytes(b"state")
    future = manager.create_future_log("m", 0, b)
    copy_into(source, future)
    fill(source, 1, epoch=5)
    copy_into(source, future)
    moved = manager.replace_current_with_future_log("m", 0)
    assert moved.dir == b / "m-0" and manager.get_log("m", 0) is moved
    assert manager.get_future_log("m", 0) is None
    assert (moved.log_start_offset, moved.log_end_offset) == (3, 14)
    assert moved.leader_epoch_cache.entries == source.leader_epoch_cache.entries
    assert (moved.dir / f"{12:020d}.snapshot").read_bytes() == b"state"
    assert [n for n in names_in(a) if n.startswith("m-0.")] and "m-0" not in names_in(a)
    # The replaced log still reads (a fetch in flight), until its delay passed.
    piece = source.read(12, 1 << 20)[0]
    assert os.pread(piece.fd, 8, piece.position)[:8] == (12).to_bytes(8, "big")
    manager._delete_doomed()
    assert names_in(a) == []
    assert OffsetCheckpointFile(b / "recovery-point-offset-checkpoint").read() == {("m", 0): 14}
    assert OffsetCheckpointFile(a / "recovery-point-offset-checkpoint").read() == {}
    assert moved.append(make_batch(1), 6).first_offset == 14
    manager.shutdown()
    restarted = LogManager([a, b])
    assert restarted.get_log("m", 0).dir == b / "m-0"
    assert restarted.get_log("m", 0).log_end_offset == 15
    restarted.shutdown()


def test_a_future_log_survives_a_restart_beside_its_current_log(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    source = manager.get_or_create_log("r", 0)
    fill(source, 4)
    future = manager.create_future_log("r", 0, b)
    copy_into(source, future)
    manager._close_all()  # a crash
    restarted = LogManager([a, b])
    assert restarted.get_log("r", 0).dir == a / "r-0"
    assert restarted.get_future_log("r", 0).log_end_offset == 8
    assert restarted.logs_in(b) == [(restarted.get_future_log("r", 0), True)]
    restarted.shutdown()


def test_a_swap_cut_between_its_renames_is_finished_at_start(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    source = manager.get_or_create_log("s", 0)
    fill(source, 4)
    future = manager.create_future_log("s", 0, b)
    copy_into(source, future)
    future.flush()
    future_dir = future.dir
    manager._close_all()
    os.replace(a / "s-0", a / f"s-0.{'0' * 32}-delete")  # the first rename, then the crash
    restarted = LogManager([a, b])
    assert restarted.get_log("s", 0).dir == b / "s-0"
    assert restarted.get_log("s", 0).log_end_offset == 8
    assert not future_dir.exists() and names_in(a) == []
    restarted.shutdown()


def test_a_future_log_whose_source_is_gone_is_removed(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    fill(manager.get_or_create_log("o", 0), 2)
    future = manager.create_future_log("o", 0, b)
    manager.delete_log("o", 0)
    assert not future.dir.exists() and manager.future_logs == {}
    (b / f"x-1.{'a' * 32}-future").mkdir()  # left by an older crash
    manager.shutdown()
    restarted = LogManager([a, b])
    assert restarted.logs == {} and names_in(b) == []
    restarted.shutdown()


def test_a_failed_dir_leaves_the_manager_and_the_others_go_on(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    in_a, in_b = manager.get_or_create_log("f", 0), manager.get_or_create_log("f", 1)
    fill(in_a, 2)
    fill(in_b, 2)
    manager.create_future_log("f", 1, a)
    shutil.rmtree(a)  # the disk is gone
    manager.dirs.check()  # no event loop: handled at once
    assert manager.dirs.offline.keys() == {a}
    assert list(manager.logs) == [("f", 1)] and manager.future_logs == {}
    assert all(segment.fd < 0 for segment in in_a.segments)
    fill(in_b, 1)
    manager.flush_dirty_logs()
    manager.cleanup_logs()
    manager.shutdown()
    assert not a.exists()
    restarted = LogManager([a, b])  # a is empty now: it starts online again
    assert list(restarted.logs) == [("f", 1)]
    restarted.shutdown()


def test_the_last_online_dir_stays_online(tmp_path):
    a, b = dirs_of(tmp_path, 2)
    manager = LogManager([a, b])
    manager.dirs.report(b / "t-0", "disk full")
    assert manager.dirs.offline.keys() == {b}
    manager.dirs.report(a, "disk full")
    assert manager.dirs.online == [a]
    assert manager.get_or_create_log("x", 0).dir == a / "x-0"
    with pytest.raises(KafkaStorageError, match="offline"):
        manager.create_future_log("x", 0, b)
    manager.shutdown()


def test_a_second_dir_that_cannot_be_made_is_offline_from_the_start(tmp_path):
    a = tmp_path / "a"
    blocked = tmp_path / "file"
    blocked.write_bytes(b"")
    manager = LogManager([a, blocked / "b"])
    assert manager.dirs.offline.keys() == {blocked / "b"}
    assert manager.get_or_create_log("t", 0).dir == a / "t-0"
    manager.shutdown()
    with pytest.raises(KafkaStorageError, match="cannot use log dir"):
        LogManager([blocked / "b", a])

"""Crashes around the leader epoch cache: reopening makes the cache agree
with the log that survived, whatever the checkpoint file says; the file
follows at the next flush or close."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from kcore.log.checkpoints import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile
from kcore.log.log import Log
from tests.support.batches import build_batch


def write_log(directory: Path, epochs_and_counts) -> list[int]:
    """A closed log with one batch of ``count`` records per (epoch, count)
    appended as leader; returns each batch's end position in the file."""
    log = Log.open(directory)
    ends = []
    for epoch, count in epochs_and_counts:
        log.append(build_batch([b"v"] * count), leader_epoch=epoch)
        ends.append(log.active_segment.size)
    log.close()
    return ends


def checkpoint_of(directory: Path) -> list[tuple[int, int]]:
    return LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT).read()


@pytest.mark.parametrize("cut", ["at_batch_boundary", "inside_batch"])
def test_checkpoint_ahead_of_a_log_that_lost_its_tail_drops_the_stale_epochs(tmp_path, cut):
    directory = tmp_path / "t-0"
    ends = write_log(directory, [(0, 3), (4, 2), (4, 1)])
    assert checkpoint_of(directory) == [(0, 0), (4, 3)]
    size = ends[0] if cut == "at_batch_boundary" else ends[0] + 20
    os.truncate(directory / "00000000000000000000.log", size)
    log = Log.open(directory)  # unclean: the segment is recovered
    try:
        assert log.log_end_offset == 3
        assert log.leader_epoch_cache.entries == [(0, 0)]
        log.flush()
        assert checkpoint_of(directory) == [(0, 0)]
        log.append(build_batch([b"v"]), leader_epoch=4)
        assert log.end_offset_for_epoch(0) == (0, 3)
    finally:
        log.close()


def test_checkpoint_written_ahead_of_the_log_loses_only_what_lies_past_the_end(tmp_path):
    directory = tmp_path / "t-0"
    write_log(directory, [(0, 3), (2, 2)])
    LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT).write([(0, 0), (2, 3), (6, 5)])
    log = Log.open(directory, clean_shutdown=True)
    try:
        assert log.leader_epoch_cache.entries == [(0, 0), (2, 3)]
        assert log.end_offset_for_epoch(2) == (2, 5)
    finally:
        log.close()


def test_recovery_relearns_epochs_of_batches_a_crash_brought_back(tmp_path):
    """truncate_to(3) reached the checkpoint but not the segment file."""
    directory = tmp_path / "t-0"
    write_log(directory, [(0, 3), (3, 2), (5, 1)])
    LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT).write([(0, 0)])
    log = Log.open(directory)
    try:
        assert log.log_end_offset == 6
        assert log.leader_epoch_cache.entries == [(0, 0), (3, 3), (5, 5)]
    finally:
        log.close()
    assert checkpoint_of(directory) == [(0, 0), (3, 3), (5, 5)]


@pytest.mark.parametrize("clean_shutdown, expected", [
    (True, []),                            # nothing recovered, nothing to learn from
    (False, [(1, 0), (2, 2)]),             # the recovered segment teaches its epochs
])
def test_malformed_checkpoint_never_fails_the_open(tmp_path, caplog, clean_shutdown, expected):
    directory = tmp_path / "t-0"
    write_log(directory, [(1, 2), (2, 2)])
    (directory / LEADER_EPOCH_CHECKPOINT).write_text("0\n7\n1 0\n")
    with caplog.at_level(logging.WARNING):
        log = Log.open(directory, clean_shutdown=clean_shutdown)
    try:
        assert log.log_end_offset == 4
        assert log.leader_epoch_cache.entries == expected
        assert any(LEADER_EPOCH_CHECKPOINT in record.getMessage() for record in caplog.records)
        log.append(build_batch([b"v"]), leader_epoch=3)
        assert log.leader_epoch_cache.latest_entry == (3, 4)
    finally:
        log.close()


def test_missing_checkpoint_of_a_non_empty_log_is_a_warning(tmp_path, caplog):
    directory = tmp_path / "t-0"
    write_log(directory, [(0, 2)])
    (directory / LEADER_EPOCH_CHECKPOINT).unlink()
    with caplog.at_level(logging.WARNING, logger="kcore.log.log"):
        log = Log.open(directory, clean_shutdown=True)
    try:
        assert log.leader_epoch_cache.entries == []
        assert [r for r in caplog.records if LEADER_EPOCH_CHECKPOINT in r.getMessage()]
    finally:
        log.close()


def test_log_start_beyond_the_log_end_clears_the_cache(tmp_path):
    directory = tmp_path / "t-0"
    write_log(directory, [(0, 2), (1, 2)])
    log = Log.open(directory, log_start_offset=10, clean_shutdown=True)
    try:
        assert (log.log_start_offset, log.log_end_offset) == (10, 10)
        assert log.leader_epoch_cache.entries == []
    finally:
        log.close()
    assert checkpoint_of(directory) == []

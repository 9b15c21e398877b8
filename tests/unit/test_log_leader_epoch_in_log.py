"""The Log keeps its leader epoch cache: appends as leader and as replica,
truncation, log start moves and reopening."""
from __future__ import annotations

import dataclasses
import logging

from kcore.log.checkpoints import LEADER_EPOCH_CHECKPOINT
from kcore.protocol.records import NO_PARTITION_LEADER_EPOCH

UNDEFINED = (-1, -1)


def leader_log(open_log, batch, epochs_and_counts, **config):
    """A log whose leader appended one batch of ``count`` records per
    (epoch, count)."""
    log = open_log(**config)
    for epoch, count in epochs_and_counts:
        log.append(batch(count), leader_epoch=epoch)
    return log


def test_leader_appends_under_epochs_0_1_3_answer_end_offset_for_epoch(open_log, batch):
    log = leader_log(open_log, batch, [(0, 2), (0, 1), (1, 2), (3, 1), (3, 2)])
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 3), (3, 5)]
    assert log.log_end_offset == 8
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (1, 5)
    assert log.end_offset_for_epoch(2) == (1, 5)
    assert log.end_offset_for_epoch(3) == (3, 8)
    assert log.end_offset_for_epoch(4) == UNDEFINED
    assert log.end_offset_for_epoch(-1) == UNDEFINED


def test_the_epoch_file_is_written_once_before_the_recovery_point_moves(open_log, batch,
                                                                        monkeypatch):
    log = open_log()
    checkpoint = log.leader_epoch_cache.checkpoint
    writes = []
    monkeypatch.setattr(checkpoint, "write",
                        lambda entries, durable, staged: writes.append((list(entries), log.recovery_point)))
    for _ in range(5):
        log.append(batch(1), leader_epoch=4)
    log.append(batch(1), leader_epoch=2)  # an older epoch never rewrites history
    assert writes == [] and log.leader_epoch_cache.entries == [(4, 0)]
    log.flush()
    log.flush()
    assert writes == [([(4, 0)], 0)] and log.recovery_point == 6


def test_replica_learns_the_epochs_its_leader_stamped(open_log, batch):
    log = open_log()
    log.append(batch(2, base_offset=0, partition_leader_epoch=2)
               + batch(3, base_offset=2, partition_leader_epoch=2)
               + batch(1, base_offset=5, partition_leader_epoch=5), leader_epoch=9,
               assign_offsets=False)
    log.append(batch(1, base_offset=6, partition_leader_epoch=5), 9, assign_offsets=False)
    assert log.leader_epoch_cache.entries == [(2, 0), (5, 5)]
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert log.end_offset_for_epoch(5) == (5, 7)


def test_replica_batches_without_or_below_the_latest_epoch_teach_nothing(open_log, batch):
    log = open_log()
    log.append(batch(1, base_offset=0, partition_leader_epoch=NO_PARTITION_LEADER_EPOCH), 0,
               assign_offsets=False)
    assert log.leader_epoch_cache.entries == []
    log.append(batch(1, base_offset=1, partition_leader_epoch=3)
               + batch(1, base_offset=2, partition_leader_epoch=1), 0, assign_offsets=False)
    assert log.leader_epoch_cache.entries == [(3, 1)]


def test_truncate_to_drops_the_epochs_that_started_after_the_new_end(open_log, batch):
    log = leader_log(open_log, batch, [(0, 3), (1, 3), (2, 3), (2, 3)])
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 3), (2, 6)]
    log.truncate_to(9)
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 3), (2, 6)]
    log.truncate_to(7)  # inside the first epoch-2 batch: the whole batch goes, and the epoch
    assert log.log_end_offset == 6
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 3)]
    assert log.end_offset_for_epoch(1) == (1, 6)
    log.append(batch(1), leader_epoch=5)
    assert log.leader_epoch_cache.entries == [(0, 0), (1, 3), (5, 6)]


def test_truncate_fully_and_start_at_clears_the_cache(open_log, batch):
    log = leader_log(open_log, batch, [(0, 2), (1, 2)])
    log.truncate_fully_and_start_at(10)
    assert log.leader_epoch_cache.entries == []
    assert log.end_offset_for_epoch(1) == UNDEFINED
    log.append(batch(1), leader_epoch=2)
    assert log.leader_epoch_cache.entries == [(2, 10)]


def test_log_start_moves_truncate_the_cache_from_the_start(open_log, batch):
    one = len(batch(1))
    log = leader_log(open_log, batch, [(0, 1), (1, 1), (1, 1), (2, 1), (3, 1)],
                     segment_bytes=one, retention_ms=-1, file_delete_delay_ms=0)
    assert log.maybe_increment_log_start_offset(2)
    assert log.leader_epoch_cache.entries == [(1, 2), (2, 3), (3, 4)]
    log.update_config(dataclasses.replace(log.config, retention_bytes=one))
    assert log.delete_old_segments() > 0
    assert log.log_start_offset == 4
    assert log.leader_epoch_cache.entries == [(3, 4)]
    assert log.end_offset_for_epoch(1) == (1, 4)


def test_reopen_after_close_keeps_the_cache(open_log, batch):
    log = leader_log(open_log, batch, [(0, 2), (3, 2)])
    log.flush()
    log.close()
    for clean_shutdown in (True, False):
        reopened = open_log(clean_shutdown=clean_shutdown)
        assert reopened.leader_epoch_cache.entries == [(0, 0), (3, 2)]
        assert reopened.end_offset_for_epoch(0) == (0, 2)
        reopened.close()


def test_a_log_killed_before_its_first_flush_relearns_its_epochs_without_a_warning(
        open_log, batch, caplog):
    """No flush ever wrote the epoch file (a SIGKILL soon after start):
    recovery reads every batch and learns every epoch, so nothing is
    unknown and nothing is said to be."""
    killed = leader_log(open_log, batch, [(0, 2), (3, 2)])
    assert not (killed.dir / LEADER_EPOCH_CHECKPOINT).exists()
    with caplog.at_level(logging.WARNING, logger="kcore.log.log"):
        reopened = open_log("topic-0")
    assert reopened.leader_epoch_cache.entries == [(0, 0), (3, 2)]
    assert "leader epochs" not in caplog.text


def test_a_lost_epoch_file_that_recovery_cannot_refill_is_reported(open_log, batch, caplog):
    log = leader_log(open_log, batch, [(0, 2), (3, 2)])
    log.flush()
    log.close()
    (log.dir / LEADER_EPOCH_CHECKPOINT).unlink()
    with caplog.at_level(logging.WARNING, logger="kcore.log.log"):
        reopened = open_log(recovery_point=4, clean_shutdown=True)
    assert reopened.leader_epoch_cache.entries == []
    assert "the leader epochs of [0, 4) are unknown" in caplog.text


def test_reopen_with_a_later_log_start_offset_moves_the_first_entry(open_log, batch):
    leader_log(open_log, batch, [(0, 2), (1, 2), (2, 2)]).close()
    log = open_log(log_start_offset=3, clean_shutdown=True)
    assert log.leader_epoch_cache.entries == [(1, 3), (2, 4)]

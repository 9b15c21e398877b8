"""LeaderEpochCache against a dict that applies Kafka's rules (the oracle),
Kafka's answers of end_offset_for case by case, and the checkpoint file."""
from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.log.checkpoints import LEADER_EPOCH_CHECKPOINT
from kcore.log.errors import KafkaStorageError
from kcore.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
LOG_END_OFFSET = 100  # beyond every start offset the strategies draw


class MemoryCheckpoint:
    """LeaderEpochCheckpointFile in memory, so Hypothesis runs without fsyncs."""

    def __init__(self, entries=(), fail_writes: bool = False):
        self.path = "memory"
        self.stored = list(entries)
        self.fail_writes = fail_writes
        self.writes = 0

    def read(self):
        return list(self.stored)

    def write(self, entries, durable=True, staged=None):
        if self.fail_writes:
            raise OSError(28, "No space left on device")
        self.stored = list(entries)
        self.writes += 1


class Model:
    """Kafka LeaderEpochFileCache as plainly as possible: epoch -> start offset."""

    def __init__(self):
        self.epochs: dict[int, int] = {}

    def latest(self):
        return max(self.epochs) if self.epochs else None

    def assign(self, epoch, start_offset):
        latest = self.latest()
        if latest == epoch and self.epochs[latest] <= start_offset:
            return
        self.epochs = {e: s for e, s in self.epochs.items() if e < epoch and s < start_offset}
        self.epochs[epoch] = start_offset

    def truncate_from_end(self, end_offset):
        self.epochs = {e: s for e, s in self.epochs.items() if s < end_offset}

    def truncate_from_start(self, start_offset):
        in_force = [e for e, s in self.epochs.items() if s <= start_offset]
        if in_force:
            self.epochs = {e: s for e, s in self.epochs.items() if s > start_offset}
            self.epochs[max(in_force)] = start_offset

    def clear(self):
        self.epochs = {}

    def end_offset_for(self, requested, log_end_offset):
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED
        if requested == self.latest():
            return requested, log_end_offset
        above = [e for e in self.epochs if e > requested]
        if not above:
            return UNDEFINED
        at_or_below = [e for e in self.epochs if e <= requested]
        return (max(at_or_below) if at_or_below else requested), self.epochs[min(above)]

    def epoch_for_offset(self, offset):
        started = [e for e, s in self.epochs.items() if s <= offset]
        return max(started) if started else None


operations = st.lists(st.one_of(
    st.tuples(st.just("assign"), st.integers(0, 8), st.integers(0, 50)),
    st.tuples(st.just("truncate_from_end"), st.integers(0, 60)),
    st.tuples(st.just("truncate_from_start"), st.integers(0, 60)),
    st.tuples(st.just("clear")),
), max_size=30)


@given(operations)
def test_cache_matches_kafka_rules_after_every_operation(steps):
    checkpoint = MemoryCheckpoint()
    cache, model = LeaderEpochCache(checkpoint), Model()
    for name, *args in steps:
        getattr(cache, name)(*args)
        getattr(model, name)(*args)
        entries = sorted(model.epochs.items())
        assert cache.entries == entries
        assert [s for _, s in entries] == sorted({s for _, s in entries})  # strictly increasing
        cache.flush()
        assert checkpoint.stored == entries, "a flush persists every change"
        assert cache.latest_epoch == (entries[-1][0] if entries else UNDEFINED_EPOCH)
        assert cache.latest_entry == (entries[-1] if entries else None)
        assert cache.previous_epoch == (entries[-2][0] if len(entries) > 1 else None)
        for epoch in range(-1, 11):
            assert cache.end_offset_for(epoch, LOG_END_OFFSET) == \
                model.end_offset_for(epoch, LOG_END_OFFSET), epoch
        for offset in range(0, 62, 3):
            assert cache.epoch_for_offset(offset) == model.epoch_for_offset(offset)
    assert LeaderEpochCache(checkpoint).entries == sorted(model.epochs.items())


def cache_of(*entries):
    return LeaderEpochCache(MemoryCheckpoint(entries))


@pytest.mark.parametrize("entries, requested, expected", [
    ((), 0, UNDEFINED),                         # empty cache
    ((), UNDEFINED_EPOCH, UNDEFINED),
    (((0, 0), (2, 10), (5, 20)), 5, (5, 42)),   # the latest epoch ends at the log end
    (((0, 0), (2, 10), (5, 20)), 2, (2, 20)),   # ends where the next epoch starts
    (((0, 0), (2, 10), (5, 20)), 3, (2, 20)),   # absent: the largest epoch below it
    (((2, 10), (5, 20)), 1, (1, 10)),           # below the earliest: its start offset
    (((0, 0), (2, 10), (5, 20)), 6, UNDEFINED),  # beyond the latest
    (((0, 0), (2, 10)), UNDEFINED_EPOCH, UNDEFINED),
])
def test_end_offset_for_gives_kafkas_answer(entries, requested, expected):
    assert cache_of(*entries).end_offset_for(requested, 42) == expected


@pytest.mark.parametrize("epoch, start_offset, expected", [
    (5, 25, [(0, 0), (2, 10), (5, 20)]),          # same epoch, later: not newer, ignored
    (5, 20, [(0, 0), (2, 10), (5, 20)]),
    (5, 15, [(0, 0), (2, 10), (5, 15)]),          # same epoch, earlier: moves back
    (6, 30, [(0, 0), (2, 10), (5, 20), (6, 30)]),
    (6, 10, [(0, 0), (6, 10)]),                   # start offset goes backwards
    (3, 30, [(0, 0), (2, 10), (3, 30)]),          # epoch goes backwards
    (1, 5, [(0, 0), (1, 5)]),
])
def test_assign_ignores_what_is_not_newer_and_removes_conflicts(epoch, start_offset, expected):
    cache = cache_of((0, 0), (2, 10), (5, 20))
    assert cache.assign(epoch, start_offset) == (cache.entries != [(0, 0), (2, 10), (5, 20)])
    assert cache.entries == expected


def test_assign_rejects_negative_entries():
    with pytest.raises(ValueError):
        cache_of().assign(-1, 0)
    with pytest.raises(ValueError):
        cache_of().assign(0, -1)


def test_truncate_from_start_keeps_the_epoch_in_force_at_the_new_start():
    cache = cache_of((0, 0), (2, 10), (5, 20))
    assert cache.truncate_from_start(15)
    assert cache.entries == [(2, 15), (5, 20)]
    assert not cache.truncate_from_start(15)
    assert cache.truncate_from_start(20) and cache.entries == [(5, 20)]


def test_truncate_from_end_drops_entries_starting_at_or_after_it():
    cache = cache_of((0, 0), (2, 10), (5, 20))
    assert not cache.truncate_from_end(21)
    assert cache.truncate_from_end(10) and cache.entries == [(0, 0)]


def test_a_failed_flush_raises_and_the_next_one_writes_again():
    checkpoint = MemoryCheckpoint([(0, 0)])
    cache = LeaderEpochCache(checkpoint)
    checkpoint.fail_writes = True
    cache.assign(1, 5)
    with pytest.raises(KafkaStorageError):
        cache.flush()
    assert cache.entries == [(0, 0), (1, 5)] and checkpoint.stored == [(0, 0)]
    checkpoint.fail_writes = False
    cache.flush()
    assert checkpoint.stored == [(0, 0), (1, 5)]
    cache.flush()
    assert checkpoint.writes == 1  # nothing changed since


def test_checkpoint_file_round_trips_in_kafkas_format(tmp_path):
    cache = LeaderEpochCache.in_directory(tmp_path)
    cache.assign(0, 0)
    cache.assign(3, 12)
    cache.flush()
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n3 12\n"
    assert LeaderEpochCache.in_directory(tmp_path).entries == [(0, 0), (3, 12)]
    cache.clear()
    cache.flush()
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n0\n"
    assert LeaderEpochCache.in_directory(tmp_path).entries == []


def test_missing_file_is_an_empty_cache_without_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        cache = LeaderEpochCache.in_directory(tmp_path)
    assert cache.entries == [] and cache.latest_epoch == UNDEFINED_EPOCH
    assert not caplog.records


@pytest.mark.parametrize("text", [
    "", "garbage\n", "0\n3\n0 0\n1 5\n", "1\n1\n0 0\n", "0\n1\n0\n", "0\n1\nzero 0\n",
    "0\n2\n0 0\n-1 5\n",
])
def test_malformed_file_is_an_empty_cache_and_a_warning(tmp_path, caplog, text):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text(text)
    with caplog.at_level(logging.WARNING, logger="kcore.log.leader_epoch"):
        cache = LeaderEpochCache.in_directory(tmp_path)
    assert cache.entries == []
    assert caplog.records


def test_non_monotonic_file_is_loaded_through_assign(tmp_path):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\n5 10\n3 20\n")
    assert LeaderEpochCache.in_directory(tmp_path).entries == [(0, 0), (3, 20)]

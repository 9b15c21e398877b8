"""Swapping cleaned segments in: reads interleaved with the pass, old
slices kept readable, a log changing under the pass, and what the loader
does with ``.cleaned`` / ``.swap`` files left by a crash."""
from __future__ import annotations

import os
import shutil

from kcore.log.cleaner_task import CleaningTask
from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.cleaner import clean, fill, latest_of, read_batches, records_of

COMPACT = dict(cleanup_policy="compact")


def read_slices(slices) -> bytes:
    return b"".join(os.pread(s.fd, s.size, s.position) for s in slices)


def test_reads_between_cleaning_steps_see_a_consistent_log(open_log):
    log = open_log(segment_bytes=8192, file_delete_delay_ms=60_000, **COMPACT)
    expected = fill(log, batches=400, per_batch=10, keys=50)
    log.roll()
    held = log.read(0, 1 << 30)
    held_bytes = read_slices(held)
    steps = CleaningTask(log, 0, log.active_segment.base_offset, 10_000).steps()
    value, step, swaps, checks, result = None, 0, 0, 0, None
    segments = log.segments
    while True:
        try:
            request = steps.send(value)
        except StopIteration as stop:
            result, request = stop.value, None
        value = request.function(*request.args) if request is not None else None
        step += 1
        swapped = log.segments != segments
        if swapped or step % 50 == 0:
            # Every CRC valid, offsets increasing, and the latest record of
            # every key present at its offset, whatever was cleaned so far.
            assert latest_of(log) == expected
            checks += 1
        if swapped:
            swaps += 1
            segments = log.segments
        if result is not None:
            break
    assert result.completed and swaps == result.stats.groups > 5 and checks > swaps
    assert len(records_of(read_batches(log))) == 50
    # Slices handed out before the swaps still read the bytes they named.
    assert read_slices(held) == held_bytes


def test_a_pass_stops_without_leftovers_when_the_log_is_truncated_under_it(open_log):
    log = open_log(segment_bytes=4096, file_delete_delay_ms=0, **COMPACT)
    fill(log, batches=100, per_batch=10, keys=30)
    log.roll()
    steps = CleaningTask(log, 0, log.active_segment.base_offset, 10_000).steps()
    request = None
    while request is None:
        request = steps.send(None)  # up to the first group's offload
    value = request.function(*request.args)
    # The second segment becomes the active one: the offset map is stale.
    log.truncate_to(log.segments[1].base_offset)
    expected = latest_of(log)
    while True:
        try:
            request = steps.send(value)
        except StopIteration as stop:
            result = stop.value
            break
        value = request.function(*request.args) if request is not None else None
    assert not result.completed and result.stats.groups == 0
    assert [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))] == []
    assert latest_of(log) == expected
    fill(log, batches=5, per_batch=10, keys=30, start=10_000)
    assert read_batches(log)[-1].last_offset == log.log_end_offset - 1


def test_cleaned_files_without_a_swap_are_dropped_when_the_log_opens(tmp_path):
    config = LogConfig(segment_bytes=4096, **COMPACT)
    log = Log.open(tmp_path / "t-0", config)
    expected = fill(log, batches=40, per_batch=10, keys=30)
    log.roll()
    log.close()
    base = "00000000000000000000"
    for suffix in (".log.cleaned", ".index.cleaned", ".timeindex.cleaned", ".index.swap"):
        (tmp_path / "t-0" / (base + suffix)).write_bytes(b"half-written compaction output")
    log = Log.open(tmp_path / "t-0", config)
    try:
        assert latest_of(log) == expected
        assert not [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))]
    finally:
        log.close()


def test_a_decided_swap_replaces_the_segments_in_its_range_when_the_log_opens(tmp_path):
    config = LogConfig(segment_bytes=4096, file_delete_delay_ms=60_000, **COMPACT)
    log = Log.open(tmp_path / "t-0", config)
    expected = fill(log, batches=60, per_batch=10, keys=30)
    log.roll()
    log.close()
    shutil.copytree(tmp_path / "t-0", tmp_path / "c-0")
    # Cleaned with a larger segment.bytes, so one segment replaces them all.
    cleaned = Log.open(tmp_path / "c-0", LogConfig(segment_bytes=1 << 20, **COMPACT),
                       clean_shutdown=True)
    clean(cleaned)
    compacted = cleaned.segments[0]
    replaced_end = compacted.next_offset
    assert len(cleaned.segments) == 2 and replaced_end > 500
    cleaned.close()
    # The crash came after the first old segments were renamed .deleted
    # and before the .swap files got their final names.
    directory = tmp_path / "t-0"
    first = sorted(n for n in os.listdir(directory) if n.endswith(".log"))[0]
    os.replace(directory / first, directory / (first + ".deleted"))
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(tmp_path / "c-0" / f"{compacted.base_offset:020d}{suffix}",
                    directory / f"{compacted.base_offset:020d}{suffix}.swap")
    log = Log.open(directory, config)
    try:
        assert latest_of(log) == expected
        bases = [segment.base_offset for segment in log.segments]
        assert bases == [0, 600]
        assert len(records_of(read_batches(log))) == 30
        assert not [n for n in os.listdir(directory) if n.endswith((".swap", ".deleted"))]
    finally:
        log.close()

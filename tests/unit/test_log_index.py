"""OffsetIndex and TimeIndex files against a sorted-list oracle."""
from __future__ import annotations

import bisect
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.log.errors import KafkaStorageError
from kcore.log.offset_index import OffsetIndex
from kcore.log.time_index import TimeIndex

BASE = 1_000


@given(st.lists(st.integers(1, 50), min_size=0, max_size=100), st.lists(st.integers(0, 6000), max_size=20))
def test_offset_index_lookup_matches_sorted_map(gaps, targets):
    with tempfile.TemporaryDirectory() as directory:
        index = OffsetIndex(Path(directory) / "x.index", BASE, 8 * 200)
        index.make_appendable()
        offsets, positions = [], []
        offset = position = BASE
        for gap in gaps:
            offset += gap
            position += gap * 10
            index.append(offset, position)
            offsets.append(offset)
            positions.append(position)
        for target in targets:
            slot = bisect.bisect_right(offsets, BASE + target) - 1
            expected = (BASE, 0) if slot < 0 else (offsets[slot], positions[slot])
            assert index.lookup(BASE + target) == expected
        index.close()


@given(st.lists(st.integers(1, 50), min_size=0, max_size=60), st.integers(0, 3000))
def test_offset_index_truncate_removes_entries_at_or_after_offset(gaps, cut):
    with tempfile.TemporaryDirectory() as directory:
        index = OffsetIndex(Path(directory) / "x.index", BASE, 8 * 100)
        index.make_appendable()
        offsets = []
        offset = BASE
        for i, gap in enumerate(gaps):
            offset += gap
            index.append(offset, i + 1)
            offsets.append(offset)
        index.truncate_to(BASE + cut)
        assert index.entries == bisect.bisect_left(offsets, BASE + cut)
        index.close()


def test_offset_index_rejects_out_of_order_and_full(tmp_path):
    index = OffsetIndex(tmp_path / "a.index", 0, 16)
    index.make_appendable()
    index.append(5, 100)
    with pytest.raises(KafkaStorageError):
        index.append(5, 200)
    with pytest.raises(KafkaStorageError):
        index.append(6, 100)
    index.append(6, 200)
    assert index.is_full
    with pytest.raises(KafkaStorageError):
        index.append(7, 300)
    index.close()


def test_index_survives_trim_and_reopen(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 8 * 1000)
    index.make_appendable()
    for i in range(1, 11):
        index.append(i * 3, i * 100)
    index.trim()
    index.close()
    assert os.path.getsize(path) == 80
    reopened = OffsetIndex(path, 0, 8 * 1000)
    assert reopened.entries == 10 and not reopened.damaged
    assert reopened.lookup(16) == (15, 500)
    reopened.close()


def test_untrimmed_index_after_crash_counts_only_the_written_prefix(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 8 * 1000)
    index.make_appendable()
    for i in range(1, 4):
        index.append(i, i * 10)
    index.flush()
    index.close()  # no trim: the zero-filled tail stays
    reopened = OffsetIndex(path, 0, 8 * 1000)
    assert reopened.entries == 3 and not reopened.damaged
    reopened.close()


def test_trimmed_index_with_out_of_order_entries_is_reported_damaged(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(bytes.fromhex("00000001 0000000a 00000003 00000014 00000002 0000001e"))
    index = OffsetIndex(path, 0, 8 * 1000)
    assert index.damaged and index.entries == 2
    index.close()


@given(st.lists(st.tuples(st.integers(-5, 40), st.integers(0, 3)), max_size=60),
       st.lists(st.integers(-10, 2000), max_size=10))
def test_time_index_keeps_increasing_timestamps_and_lookup_matches_oracle(steps, targets):
    with tempfile.TemporaryDirectory() as directory:
        index = TimeIndex(Path(directory) / "x.timeindex", BASE, 12 * 100)
        index.make_appendable()
        timestamps, offsets = [], []
        ts, offset = 0, BASE
        for ts_step, offset_step in steps:
            ts += ts_step
            offset += offset_step
            appended = index.maybe_append(ts, offset)
            assert appended == (not timestamps or ts > timestamps[-1])
            if appended:
                timestamps.append(ts)
                offsets.append(offset)
        for target in targets:
            slot = bisect.bisect_right(timestamps, target) - 1
            expected = (-1, BASE) if slot < 0 else (timestamps[slot], offsets[slot])
            assert index.lookup(target) == expected
        index.close()


def test_time_index_final_entry_may_exceed_a_full_file(tmp_path):
    index = TimeIndex(tmp_path / "t.timeindex", 0, 12)
    index.make_appendable()
    assert index.maybe_append(10, 1)
    with pytest.raises(KafkaStorageError):
        index.maybe_append(20, 2)
    assert index.maybe_append(20, 2, skip_full_check=True)
    assert index.last_entry() == (20, 2)
    index.close()


def test_time_index_truncate_to_offset(tmp_path):
    index = TimeIndex(tmp_path / "t.timeindex", 100, 12 * 10)
    index.make_appendable()
    for i in range(5):
        index.maybe_append(1000 + i, 100 + 2 * i)
    index.truncate_to(104)
    assert index.entries == 2 and index.last_entry() == (1001, 102)
    index.close()

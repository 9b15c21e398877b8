"""index kernels against bisect over sorted lists (the reference)."""
from __future__ import annotations

import bisect
import mmap
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore._native import index as native
from kcore._native.twin import index as twin

sorted_unique_int32 = st.lists(st.integers(0, (1 << 31) - 1), max_size=300, unique=True).map(sorted)


def offset_index(relatives, positions=None):
    positions = positions if positions is not None else [r // 2 + i for i, r in enumerate(relatives)]
    return b"".join(struct.pack(">ii", r, p) for r, p in zip(relatives, positions))


def time_index(timestamps, relatives):
    return b"".join(struct.pack(">qi", t, r) for t, r in zip(timestamps, relatives))


@given(sorted_unique_int32, st.integers(-10, (1 << 31) + 10), st.integers(0, 16))
def test_offset_lookup_finds_largest_entry_at_or_below_target_like_bisect(relatives, target, padding):
    buf = offset_index(relatives) + bytes(8 * padding)
    expected = bisect.bisect_right(relatives, target) - 1
    assert native.offset_index_lookup(buf, len(relatives), target) == expected
    assert twin.offset_index_lookup(buf, len(relatives), target) == expected


@given(sorted_unique_int32, st.integers(-10, (1 << 31) + 10))
def test_position_lookup_finds_largest_position_at_or_below_target_like_bisect(positions, target):
    buf = offset_index(list(range(len(positions))), positions)
    expected = bisect.bisect_right(positions, target) - 1
    assert native.offset_index_position_lookup(buf, len(positions), target) == expected
    assert twin.offset_index_position_lookup(buf, len(positions), target) == expected


@given(st.lists(st.integers(-(1 << 62), 1 << 62), max_size=300, unique=True).map(sorted),
       st.integers(-(1 << 63), (1 << 63) - 1))
def test_time_lookup_finds_largest_timestamp_at_or_below_target_like_bisect(timestamps, target):
    buf = time_index(timestamps, range(len(timestamps)))
    expected = bisect.bisect_right(timestamps, target) - 1
    assert native.time_index_lookup(buf, len(timestamps), target) == expected
    assert twin.time_index_lookup(buf, len(timestamps), target) == expected


@given(sorted_unique_int32.filter(bool), st.data())
def test_entries_read_back_as_written(relatives, data):
    buf = bytearray(offset_index(relatives))
    slot = data.draw(st.integers(0, len(relatives) - 1))
    assert native.offset_index_entry(buf, slot) == (relatives[slot], relatives[slot] // 2 + slot)
    tbuf = time_index([r * 3 for r in relatives], relatives)
    assert native.time_index_entry(tbuf, slot) == (relatives[slot] * 3, relatives[slot])


def test_lookup_works_over_an_mmap_of_a_preallocated_file(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    with open(path, "wb") as f:
        f.write(offset_index([4, 9, 15]))
        f.truncate(4096)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
        assert native.offset_index_lookup(mapped, 3, 10) == 1
        assert native.offset_index_valid_entries(mapped, 4096 // 8) == 3


def test_a_read_only_mapping_holds_no_descriptor_and_outlives_its_views(tmp_path):
    import os
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(offset_index([4, 9, 15]))
    fds_before = len(os.listdir("/proc/self/fd"))
    fd = os.open(path, os.O_RDONLY)
    mapped = native.ReadOnlyMapping(fd, 24)
    os.close(fd)
    assert len(os.listdir("/proc/self/fd")) == fds_before  # Python's mmap would hold a dup
    twin_fd = os.open(path, os.O_RDONLY)
    with twin.ReadOnlyMapping(twin_fd, 24) as reference:
        assert bytes(memoryview(mapped)) == bytes(reference)
    os.close(twin_fd)
    assert native.offset_index_lookup(mapped, 3, 10) == 1
    view = memoryview(mapped)
    del mapped  # the view keeps the pages mapped
    assert view.readonly and native.offset_index_entry(view, 2) == (15, 15 // 2 + 2)
    with pytest.raises(ValueError):
        native.ReadOnlyMapping(0, 0)


def test_entry_count_beyond_the_buffer_is_rejected():
    with pytest.raises(ValueError):
        native.offset_index_lookup(bytes(16), 3, 0)
    with pytest.raises(ValueError):
        native.time_index_lookup(bytes(16), 2, 0)
    with pytest.raises(IndexError):
        native.offset_index_entry(bytes(16), -1)


@given(st.lists(st.tuples(st.integers(-5, 50), st.integers(-5, 500)), max_size=40))
def test_offset_valid_prefix_matches_reference(entries):
    buf = b"".join(struct.pack(">ii", r, p) for r, p in entries)
    assert native.offset_index_valid_entries(buf, len(entries)) == \
        twin.offset_index_valid_entries(buf, len(entries))


@given(st.lists(st.tuples(st.integers(-5, 50), st.integers(-5, 50)), max_size=40))
def test_time_valid_prefix_matches_reference(entries):
    buf = b"".join(struct.pack(">qi", t, r) for t, r in entries)
    assert native.time_index_valid_entries(buf, len(entries)) == \
        twin.time_index_valid_entries(buf, len(entries))


def test_zero_filled_tail_ends_the_valid_prefix():
    assert native.offset_index_valid_entries(offset_index([3, 7, 9]) + bytes(80), 13) == 3
    assert native.time_index_valid_entries(time_index([100, 200], [1, 5]) + bytes(120), 12) == 2


def test_out_of_order_entry_ends_the_valid_prefix():
    assert native.offset_index_valid_entries(offset_index([3, 7, 5, 9]), 4) == 2
    assert native.offset_index_valid_entries(offset_index([3, 7, 9], [10, 30, 20]), 3) == 2
    assert native.time_index_valid_entries(time_index([1, 5, 5], [0, 2, 3]), 3) == 2

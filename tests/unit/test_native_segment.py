"""segment kernels against the pure-Python reference on real files."""
from __future__ import annotations

import contextlib
import os
import struct
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore._native import segment as native
from kcore._native.twin import segment as twin
from kcore.server.connection import _cached
from tests.support.batches import build_batch


def build_segment(specs, base_offset=0):
    """specs: list of (records_count, value_bytes, timestamp). Consecutive offsets."""
    out = bytearray()
    offset = base_offset
    for count, value_bytes, timestamp in specs:
        batch = build_batch([bytes([count]) * value_bytes] * count,
                                      base_offset=offset, base_timestamp=timestamp,
                                      timestamp_deltas=list(range(count)))
        out += batch
        offset += count
    return bytes(out)


segment_specs = st.lists(st.tuples(st.integers(1, 5), st.integers(0, 900), st.integers(0, 10_000)),
                         min_size=0, max_size=25)


@contextlib.contextmanager
def temp_segment(data: bytes):
    """A real file holding data (Hypothesis tests cannot share tmp_path)."""
    with tempfile.TemporaryFile(dir=os.environ.get("TMPDIR")) as f:
        f.write(data)
        f.flush()
        yield f.fileno()


@pytest.fixture
def segment_file(tmp_path):
    files = []

    def write(data: bytes) -> int:
        path = tmp_path / f"{len(files):020d}.log"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        files.append(fd)
        return fd

    yield write
    for fd in files:
        os.close(fd)


def faults(data: bytes, kind: str, where: int) -> bytes:
    if not data or kind == "none":
        return data
    where %= len(data)
    if kind == "truncate":
        return data[:where]
    if kind == "flip":
        return data[:where] + bytes([data[where] ^ 0x5A]) + data[where + 1:]
    return data + bytes(where % 300 + 1)  # zero-filled tail


@given(segment_specs, st.integers(0, 1 << 40), st.sampled_from(["none", "truncate", "flip", "zeros"]),
       st.integers(0, 1 << 30), st.sampled_from([0, 100, 4096]))
def test_scan_segment_matches_reference_on_intact_and_damaged_files(
        specs, base_offset, kind, where, interval):
    data = faults(build_segment(specs, base_offset), kind, where)
    with temp_segment(data) as fd:
        got = native.scan_segment(fd, base_offset, len(data), interval)
        assert got == twin.scan_segment(fd, base_offset, len(data), interval)
    if kind == "none":
        assert got[0] == len(data) and got[7] is None
        assert got[1] == base_offset + sum(count for count, _, _ in specs)


@given(segment_specs.filter(bool), st.integers(0, 1 << 40), st.sampled_from([0, 100, 1000]),
       st.data())
def test_scan_resumed_at_an_index_entry_gives_the_rest_of_the_full_scan(
        specs, base_offset, interval, data):
    """Recovery resumes at the last trusted offset-index entry: the result
    must be the full scan's, minus what the trusted prefix holds."""
    segment = build_segment(specs, base_offset)
    with temp_segment(segment) as fd:
        full = native.scan_segment(fd, base_offset, len(segment), interval)
        index = [struct.unpack_from(">ii", full[5], i) for i in range(0, len(full[5]), 8)]
        times = [struct.unpack_from(">qi", full[6], i) for i in range(0, len(full[6]), 12)]
        if not index:
            return
        slot = data.draw(st.integers(0, len(index) - 1))
        relative, position = index[slot]
        kept_times = [entry for entry in times if entry[1] <= relative]
        timestamp, time_offset = kept_times[-1]
        args = (fd, base_offset, len(segment), interval, position, timestamp,
                base_offset + time_offset, timestamp)
        resumed = native.scan_segment(*args)
        assert resumed == twin.scan_segment(*args)
    assert resumed[:4] == full[:4] and resumed[7] is None
    assert resumed[5] == full[5][(slot + 1) * 8:]
    assert resumed[6] == full[6][len(kept_times) * 12:]


def test_scan_rebuilds_sparse_index_entries_every_interval(segment_file):
    data = build_segment([(1, 1000, 10 * i) for i in range(20)], base_offset=500)
    size = len(data) // 20
    fd = segment_file(data)
    end, next_offset, max_ts, max_ts_offset, batches, index, time_index, stop = \
        native.scan_segment(fd, 500, len(data), 4096)
    assert (end, next_offset, max_ts, max_ts_offset, batches, stop) == (len(data), 520, 190, 519, 20, None)
    entries = [struct.unpack_from(">ii", index, i) for i in range(0, len(index), 8)]
    # An entry whenever more than 4096 bytes were written since the last one.
    per_entry = 4096 // size + 1
    assert entries == [(k, k * size) for k in range(per_entry, 20, per_entry)]
    time_entries = [struct.unpack_from(">qi", time_index, i) for i in range(0, len(time_index), 12)]
    assert time_entries == [(10 * k, k) for k, _ in entries]


def test_scan_stops_at_corrupt_crc_in_a_batch_larger_than_the_read_chunk(segment_file):
    big = build_batch([os.urandom(300_000)], base_offset=1)
    small = build_batch([b"tail"], base_offset=2)
    head = build_batch([b"head"], base_offset=0)
    good = bytes(head + big + small)
    fd = segment_file(good)
    assert native.scan_segment(fd, 0, len(good))[:2] == (len(good), 3)
    bad = bytearray(good)
    bad[len(head) + 200_000] ^= 1
    fd = segment_file(bytes(bad))
    result = native.scan_segment(fd, 0, len(bad))
    assert (result[0], result[1], result[7]) == (len(head), 1, "crc")


def test_scan_stops_when_offsets_go_backwards(segment_file):
    data = build_segment([(2, 10, 0), (2, 10, 0)]) + build_segment([(1, 10, 0)], base_offset=1)
    fd = segment_file(data)
    result = native.scan_segment(fd, 0, len(data))
    assert result[1] == 4 and result[4] == 2 and result[7] == "offset"


def test_scan_of_empty_segment_reports_nothing(segment_file):
    fd = segment_file(b"")
    assert native.scan_segment(fd, 42, 0) == (0, 42, -1, 42, 0, b"", b"", None)


@given(segment_specs.filter(bool), st.data())
def test_header_walks_match_reference(specs, data):
    base_offset = data.draw(st.integers(0, 1000))
    content = build_segment(specs, base_offset)
    last_offset = base_offset + sum(c for c, _, _ in specs) - 1
    with temp_segment(content) as fd:
        target = data.draw(st.integers(base_offset - 2, last_offset + 2))
        assert native.find_batch(fd, 0, len(content), target) == \
            twin.find_batch(fd, 0, len(content), target)
        ts = data.draw(st.integers(-1, 11_000))
        min_offset = data.draw(st.integers(-1, last_offset + 1))
        assert native.find_timestamp(fd, 0, len(content), ts, min_offset) == \
            twin.find_timestamp(fd, 0, len(content), ts, min_offset)
        max_bytes = data.draw(st.integers(0, len(content) + 10))
        max_offset = data.draw(st.integers(-1, last_offset + 2))
        min_one = data.draw(st.booleans())
        assert native.read_extent(fd, 0, 0, len(content), max_bytes, max_offset, min_one) == \
            twin.read_extent(fd, 0, 0, len(content), max_bytes, max_offset, min_one)
        cut = data.draw(st.integers(0, len(content)))
        assert native.walk_headers(fd, 0, cut) == twin.walk_headers(fd, 0, cut)
        assert native.batch_headers(fd, 0, cut, 3) == twin.batch_headers(fd, 0, cut, 3)


def test_find_batch_returns_the_batch_containing_an_offset_inside_it(segment_file):
    data = build_segment([(5, 10, 0), (5, 10, 0), (5, 10, 0)], base_offset=100)
    fd = segment_file(data)
    size = len(data) // 3
    assert native.find_batch(fd, 0, len(data), 107) == (size, size, 105, 109)
    assert native.find_batch(fd, 0, len(data), 115) is None


def test_find_batch_checks_the_index_entry_it_started_from(segment_file):
    data = build_segment([(5, 10, 0), (5, 10, 0), (5, 10, 0)], base_offset=100)
    fd = segment_file(data)
    size = len(data) // 3
    assert native.find_batch(fd, size, len(data), 112, 109) == (2 * size, size, 110, 114)
    for module in (native, twin):
        with pytest.raises(ValueError, match="index entry"):
            module.find_batch(fd, size, len(data), 112, 114)
    assert twin.find_batch(fd, size, len(data), 112, 109) == (2 * size, size, 110, 114)


def test_read_extent_returns_at_least_one_oversized_batch(segment_file):
    data = build_segment([(1, 5000, 0), (1, 10, 0)])
    fd = segment_file(data)
    first = len(data) - len(build_segment([(1, 10, 0)]))
    assert native.read_extent(fd, 0, 0, len(data), 100, -1, True) == first
    assert native.read_extent(fd, 0, 0, len(data), 100, -1, False) == 0
    assert native.read_extent(fd, 0, 0, len(data), 1 << 20, -1, True) == len(data)


def test_read_extent_stops_before_batch_reaching_max_offset(segment_file):
    data = build_segment([(3, 10, 0), (3, 10, 0)])
    fd = segment_file(data)
    size = len(data) // 2
    assert native.read_extent(fd, 0, 0, len(data), 1 << 20, 5, True) == size
    assert native.read_extent(fd, 0, 0, len(data), 1 << 20, 2, True) == 0
    assert native.read_extent(fd, 0, 0, len(data), 1 << 20, 6, True) == len(data)


def test_read_extent_resumes_from_walk_position(segment_file):
    data = build_segment([(1, 100, 0)] * 10)
    fd = segment_file(data)
    size = len(data) // 10
    assert native.read_extent(fd, size, 5 * size, len(data), 6 * size, -1, True) == 7 * size
    with pytest.raises(ValueError):
        native.read_extent(fd, size, 0, len(data), 100)


def test_walks_raise_on_malformed_header_inside_trusted_range(segment_file):
    data = build_segment([(1, 100, 0)]) + bytes(100)
    fd = segment_file(data)
    with pytest.raises(ValueError, match="position"):
        native.find_batch(fd, 0, len(data), 10)
    assert native.walk_headers(fd, 0, len(data))[:3] == (len(data) - 100, 1, 1)


def test_io_errors_surface_as_oserror():
    with pytest.raises(OSError):
        native.scan_segment(987654, 0, 100)
    with pytest.raises(OSError):
        native.find_batch(987654, 0, 100, 0)


def _drop_from(fd: int, cached_bytes: int) -> None:
    """The file's first ``cached_bytes`` in the page cache, the rest on disk,
    and no read-ahead on ``fd`` (reading the last cached pages would start
    one into the rest)."""
    os.fsync(fd)  # clean pages: DONTNEED drops them
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    os.pread(fd, cached_bytes, 0)
    os.posix_fadvise(fd, cached_bytes, 0, os.POSIX_FADV_DONTNEED)
    assert _cached(fd, cached_bytes - 1, 1) and not _cached(fd, cached_bytes, 1)


def _boundaries(data: bytes) -> list[int]:
    positions, position = [], 0
    while position < len(data):
        positions.append(position)
        position += struct.unpack_from(">i", data, position + 8)[0] + 12
    return positions


@pytest.mark.parametrize("module", [native, twin], ids=["native", "twin"])
def test_read_extent_ends_at_a_header_on_disk_rather_than_wait(segment_file, module):
    """A consumer catching up from disk: the walk to the end of its slice
    stops at the first batch whose header the page cache lacks (the slice
    is shorter, whole batches still) without waiting for the disk (its
    RWF_NOWAIT read starts the disk read, and the next fetch finds it)."""
    data = build_segment([(1, 16_000, 0)] * 64)
    fd = segment_file(data)
    cached = 512 * 1024
    _drop_from(fd, cached)
    first_on_disk = next(b for b in _boundaries(data) if b + 61 > cached)
    assert module.read_extent(fd, 0, 0, len(data), len(data), -1, True, True) == first_on_disk
    # Without the flag, or when the slice's first batch is the one on disk, it waits.
    assert module.read_extent(fd, first_on_disk, first_on_disk, len(data), 1, -1, True, True) > first_on_disk
    assert module.read_extent(fd, 0, 0, len(data), len(data), -1, True) == len(data)


def test_find_batch_on_pages_on_disk_waits_for_them(segment_file):
    data = build_segment([(2, 9_000, 0)] * 40)
    fd = segment_file(data)
    _drop_from(fd, 64 * 1024)
    assert native.find_batch(fd, 0, len(data), 61) == twin.find_batch(fd, 0, len(data), 61)
    assert native.find_batch(fd, 0, len(data), 61)[2:] == (60, 61)

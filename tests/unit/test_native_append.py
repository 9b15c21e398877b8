"""append.append_batches against its pure-Python twin, on real files.

Below OVERLAP_BYTES the batches are checked and then written; from it on a
helper thread checks them while this thread writes, so a bad batch is
reported after its bytes reached the file (``written`` is True)."""
from __future__ import annotations

import os
import tempfile
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcore._native import append as native
from kcore._native.twin import append as twin
from tests.support.batches import build_batch

LARGE = native.OVERLAP_BYTES


def batches(sizes) -> bytearray:
    out = bytearray()
    for size in sizes:
        out += build_batch([os.urandom(size)])
    return out


def file_bytes(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)


@pytest.fixture
def fd(tmp_path):
    descriptor = os.open(tmp_path / "segment.log", os.O_RDWR | os.O_CREAT, 0o644)
    yield descriptor
    os.close(descriptor)


def flip(data: bytearray, position: int) -> bytearray:
    damaged = bytearray(data)
    damaged[position] ^= 0x01
    return damaged


# Damage at a byte of one batch: which check fails, by offset in the batch
# (a bad record count with a good CRC: test_check_count_rule_...).
DAMAGE = [(9, "size"), (16, "magic"), (21, "crc"), (-1, "crc")]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 100, 5000, LARGE // 3, LARGE]), min_size=1, max_size=4),
       position=st.integers(0, 1 << 20), damaged=st.none() | st.tuples(st.integers(0, 3),
                                                                     st.sampled_from(DAMAGE)))
def test_same_verdict_as_the_reference(sizes, position, damaged):
    data = batches(sizes)
    starts = [sum(len(build_batch([b"x" * s])) for s in sizes[:i]) for i in range(len(sizes))]
    if damaged is not None:
        index, (at, _) = damaged
        batch_start = starts[index % len(sizes)]
        batch_end = batch_start + len(build_batch([b"x" * sizes[index % len(sizes)]]))
        data = flip(data, batch_end - 1 if at < 0 else batch_start + at)
    with tempfile.TemporaryFile(dir=os.environ.get("TMPDIR")) as a, \
            tempfile.TemporaryFile(dir=os.environ.get("TMPDIR")) as b:
        got = native.append_batches(a.fileno(), data, position)
        want = twin.append_batches(b.fileno(), data, position)
        if want is None:
            assert got is None
            assert file_bytes(a.fileno()) == file_bytes(b.fileno())
            assert file_bytes(a.fileno())[position:] == bytes(data)
        else:
            assert got is not None and got[:2] == want[:2]
            assert got[2] == (len(data) >= LARGE)  # written only when overlapped
            if not got[2]:
                assert os.fstat(a.fileno()).st_size == 0


@pytest.mark.parametrize("at, reason", DAMAGE)
def test_each_check_in_a_large_append(fd, at, reason):
    data = batches([1000, LARGE, 1000])
    second = len(build_batch([b"x" * 1000]))
    second_end = second + len(build_batch([b"x" * LARGE]))
    damaged = flip(data, second_end - 1 if at < 0 else second + at)
    result = native.append_batches(fd, damaged, 0)
    assert result == (reason, second, True) if reason != "size" else result[:2] == ("size", second)


def test_valid_large_append_writes_every_byte_at_the_position(fd):
    data = batches([LARGE, 3 * LARGE, 17])
    os.pwrite(fd, b"head", 0)
    assert native.append_batches(fd, data, 4) is None
    assert file_bytes(fd) == b"head" + bytes(data)


def test_check_count_rule_matches_validate_batches(fd):
    # lastOffsetDelta != recordsCount - 1 is allowed for a compacted batch.
    data = build_batch([b"v" * LARGE], last_offset_delta=4)
    assert native.append_batches(fd, data, 0) == ("count", 0, True)
    assert native.append_batches(fd, data, 0, check_count=False) is None


def test_write_error_raises_after_the_check_finished(tmp_path):
    read_only = os.open(tmp_path / "ro.log", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        for _ in range(3):  # the helper is free again after each failure
            with pytest.raises(OSError) as raised:
                native.append_batches(read_only, batches([LARGE]), 0)
            assert raised.value.errno == 9  # EBADF
    finally:
        os.close(read_only)


def test_concurrent_callers_each_get_their_own_verdict(tmp_path):
    """One helper per process: a second caller meanwhile checks inline."""
    good, bad = batches([LARGE]), flip(batches([LARGE]), 100)
    results: dict[int, list] = {0: [], 1: []}

    def worker(n: int) -> None:
        fd = os.open(tmp_path / f"{n}.log", os.O_RDWR | os.O_CREAT, 0o644)
        for i in range(40):
            data = good if (i + n) % 2 == 0 else bad
            results[n].append((data is good, native.append_batches(fd, data, i * len(data))))
        os.close(fd)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n in (0, 1):
        assert len(results[n]) == 40
        for is_good, result in results[n]:
            assert (result is None) == is_good
            if not is_good:
                assert result[:2] == ("crc", 0)


def test_a_forked_child_gets_a_helper_of_its_own(fd):
    data = batches([LARGE])
    assert native.append_batches(fd, data, 0) is None  # the parent's helper is running
    pid = os.fork()
    if pid == 0:  # the child: no helper thread was copied; a new one must start
        ok = native.append_batches(fd, data, len(data)) is None \
            and native.append_batches(fd, flip(data, 70), 0) == ("crc", 0, True)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert file_bytes(fd)[len(data):] == bytes(data)

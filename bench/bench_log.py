"""The partition log against plain file I/O on the same file system, same run.

* Append MB/s (validate + patch + write + index) for 1 KiB, 16 KiB and
  1 MiB batches against an ``os.write`` loop of the same bytes; targets:
  >= 70% at 16 KiB, >= 90% at 1 MiB.
* Random offset lookups per second (``Log.read(offset, 1)``: segment, index
  and header walk) on a log of 1M batches.
* Recovery scan MB/s (``scan_segment``: sizes, CRC-32C, index rebuild)
  against a plain read of the same files (target >= 50%).

Each figure pair runs interleaved (A B, B A, ...) and the medians are
compared; ``report`` prints them at the end of the session.

    .venv/bin/python -m pytest bench/bench_log.py --benchmark-enable
"""
from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pytest

from kcore._native import records, segment
from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.testing.batches import build_batch

ROUND_BYTES = 32 << 20
# A handful of distinct buffers, as a broker reuses receive buffers: the
# batch being appended was just received, so it is cache-warm for both the
# log and the os.write baseline.
BUFFERS = 4


def make_batches(batch_bytes: int) -> list[bytearray]:
    return [build_batch([os.urandom(batch_bytes - 80)]) for _ in range(BUFFERS)]


@pytest.fixture
def work_dir():
    # Same file system as the log under test.
    directory = Path(tempfile.mkdtemp(prefix="kcore-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("batch_bytes", [1024, 16384, 1 << 20], ids=["1KiB", "16KiB", "1MiB"])
def test_append_throughput_against_os_write(benchmark, report, measure, work_dir, batch_bytes):
    """The compared part is the loop of appends against the loop of writes;
    opening and closing the log (once per partition, not per append) and
    deleting the files are timed apart and reported as ``whole_ratio``."""
    batches = make_batches(batch_bytes)
    count = ROUND_BYTES // batch_bytes
    whole = {"log": [], "write": []}

    def log_round():
        start = time.perf_counter()
        log = Log.open(work_dir / "bench-0", LogConfig())
        loop_start = time.perf_counter()
        for i in range(count):
            log.append(batches[i % BUFFERS], 0)
        loop_time = time.perf_counter() - loop_start
        log.close()
        shutil.rmtree(work_dir / "bench-0")
        whole["log"].append(time.perf_counter() - start)
        return loop_time

    def write_round():
        start = time.perf_counter()
        fd = os.open(work_dir / "plain.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        loop_start = time.perf_counter()
        for i in range(count):
            os.write(fd, batches[i % BUFFERS])
        loop_time = time.perf_counter() - loop_start
        os.close(fd)
        os.unlink(work_dir / "plain.log")
        whole["write"].append(time.perf_counter() - start)
        return loop_time

    log_time, write_time = measure.interleaved(log_round, write_round, rounds=15, self_timed=True)
    benchmark.pedantic(log_round, rounds=3)
    report(f"append {batch_bytes} B batches", log_mb_s=ROUND_BYTES / log_time / 1e6,
           os_write_mb_s=ROUND_BYTES / write_time / 1e6, ratio=write_time / log_time,
           whole_ratio=statistics.median(whole["write"]) / statistics.median(whole["log"]))


@pytest.fixture(scope="module")
def million_batch_log():
    directory = Path(tempfile.mkdtemp(prefix="kcore-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
    log = Log.open(directory / "lookups-0", LogConfig(segment_bytes=64 << 20))
    batch = build_batch([b"x" * 20])
    for _ in range(1_000_000):
        log.append(batch, 0)
    yield log
    log.close()
    shutil.rmtree(directory, ignore_errors=True)


def test_random_offset_lookups_on_a_million_batch_log(benchmark, report, measure, million_batch_log):
    log = million_batch_log
    rng = random.Random(7)
    offsets = [rng.randrange(log.log_end_offset) for _ in range(20_000)]

    def lookups():
        for offset in offsets:
            log.read(offset, 1)

    elapsed = measure.best_time(lookups, repeat=5)
    benchmark.pedantic(lookups, rounds=3)
    report(f"random offset lookups (1M batches, {len(log.segments)} segments)",
           lookups_per_s=len(offsets) / elapsed, us_per_lookup=elapsed / len(offsets) * 1e6)


@pytest.fixture(scope="module", params=[4096, 16384, 1 << 20], ids=["4KiB", "16KiB", "1MiB"])
def segment_files(request):
    """~256 MiB of batches in 64 MiB segment files, in the page cache."""
    directory = Path(tempfile.mkdtemp(prefix="kcore-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
    batch = build_batch([os.urandom(request.param - 80)])
    per_segment = (64 << 20) // len(batch)
    files = []
    for n in range(4):
        data = bytearray(batch * per_segment)
        base_offset = n * per_segment
        records.patch_batches(data, base_offset, 0)
        path = directory / f"{base_offset:020d}.log"
        path.write_bytes(data)
        files.append((os.open(path, os.O_RDONLY), base_offset, len(data)))
    yield request.param, files
    for fd, _, _ in files:
        os.close(fd)
    shutil.rmtree(directory, ignore_errors=True)


def test_recovery_scan_against_plain_read(benchmark, report, measure, segment_files):
    batch_bytes, files = segment_files
    total = sum(size for _, _, size in files)
    buffer = bytearray(1 << 20)

    def scan():
        for fd, base_offset, size in files:
            result = segment.scan_segment(fd, base_offset, size, 4096)
            assert result[0] == size and result[7] is None

    def plain_read():
        for fd, _, size in files:
            position = 0
            while position < size:
                position += os.preadv(fd, [buffer], position)

    plain_read()  # both read from the page cache
    scan_time, read_time = measure.interleaved(scan, plain_read, rounds=7)
    benchmark.pedantic(scan, rounds=3)
    report(f"recovery scan, {batch_bytes} B batches", scan_mb_s=total / scan_time / 1e6,
           read_mb_s=total / read_time / 1e6, ratio=read_time / scan_time)


def test_log_open_with_full_recovery_against_plain_read(benchmark, report, measure, work_dir):
    """The whole unclean-restart path: scan, truncate check, index rewrite."""
    batch = build_batch([os.urandom(16384 - 80)])
    log = Log.open(work_dir / "recover-0", LogConfig(segment_bytes=64 << 20))
    for _ in range((128 << 20) // len(batch)):
        log.append(batch, 0)
    log.close()
    paths = sorted((work_dir / "recover-0").glob("*.log"))
    total = sum(p.stat().st_size for p in paths)
    buffer = bytearray(1 << 20)

    def recover():
        Log.open(work_dir / "recover-0", LogConfig(segment_bytes=64 << 20), recovery_point=0).close()

    def plain_read():
        for path in paths:
            with open(path, "rb", buffering=0) as f:
                while f.readinto(buffer):
                    pass

    plain_read()
    recover_time, read_time = measure.interleaved(recover, plain_read, rounds=5)
    benchmark.pedantic(recover, rounds=2)
    report("Log.open full recovery, 16 KiB batches", recover_mb_s=total / recover_time / 1e6,
           read_mb_s=total / read_time / 1e6, ratio=read_time / recover_time)

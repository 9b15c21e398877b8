"""Log compaction throughput, and what it costs the event loop.

* Compaction MB/s: one whole cleaner pass (producer scan, offset map of
  the dirty section, rewrite, index build, fsync, swap) over a log made of
  1000-record batches whose keys cycle over 10k keys; MB/s is the size of
  the log before the pass over the pass's wall time (Kafka's "MB of log
  processed"). Shapes: small records uncompressed and lz4, 1 KiB values.
* Event-loop gaps: the same pass run by ``LogCleaner.run`` on a uvloop
  loop (the broker's) next to a 1 ms ticker: the longest wait the ticker saw, against the
  pass time a blocking pass would have made it wait.

    .venv/bin/python -m pytest bench/bench_compaction.py --benchmark-enable
"""
from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pytest
import uvloop

from kcore.log.cleaner import LogCleaner
from kcore.log.cleaner_task import CleaningTask, run_steps
from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.log.manager import LogManager
from kcore.protocol.compression import CompressionType
from kcore.protocol.records import Record, build_batch

KEYS = 10_000
PER_BATCH = 1000
CONFIG = dict(segment_bytes=64 << 20, cleanup_policy="compact", file_delete_delay_ms=0)
SHAPES = {
    # name: (records, value bytes, codec)
    "1M-records-20B": (1_000_000, 20, CompressionType.NONE),
    "1M-records-20B-lz4": (1_000_000, 20, CompressionType.LZ4),
    "100k-records-1KiB": (100_000, 1024, CompressionType.NONE),
}


def build_log(directory: Path, records: int, value_bytes: int, codec: int) -> int:
    log = Log.open(directory, LogConfig(**CONFIG))
    padding = os.urandom(value_bytes)
    for batch in range(records // PER_BATCH):
        first = batch * PER_BATCH
        log.append(build_batch([Record(key=b"key-%06d" % ((first + i) % KEYS),
                                       value=b"%09d" % (first + i) + padding[9:], timestamp=1_000)
                                for i in range(PER_BATCH)], codec=codec), 0)
    log.roll()
    size = log.size_in_bytes
    log.flush()
    log.close()
    return size


@pytest.fixture(scope="module")
def work_dir():
    directory = Path(tempfile.mkdtemp(prefix="kcore-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module", params=list(SHAPES))
def source_log(request, work_dir):
    records, value_bytes, codec = SHAPES[request.param]
    directory = work_dir / f"source-{request.param}" / "bench-0"
    size = build_log(directory, records, value_bytes, codec)
    return request.param, directory, size, records


def fresh_copy(source: Path, work_dir: Path, name: str) -> Path:
    target = work_dir / name / source.name
    shutil.rmtree(target.parent, ignore_errors=True)
    shutil.copytree(source, target)
    return target


def test_compaction_throughput(benchmark, report, work_dir, source_log):
    name, source, size, records = source_log
    times = []

    def setup():
        log = Log.open(fresh_copy(source, work_dir, "run"), LogConfig(**CONFIG), clean_shutdown=True)
        return (log,), {}

    def one_pass(log):
        started = time.perf_counter()
        result = run_steps(CleaningTask(log, 0, log.active_segment.base_offset, 10_000).steps())
        times.append(time.perf_counter() - started)
        assert result.completed and result.stats.records_retained == KEYS
        log.close()

    benchmark.pedantic(one_pass, setup=setup, rounds=5)
    median = statistics.median(times)
    report(f"compaction {name}", log_mb=size / 1e6, mb_s=size / median / 1e6,
           records_per_s=records / median)


# One shape is enough for the loop figure: the fixture is limited to it.
@pytest.mark.parametrize("source_log", ["1M-records-20B"], indirect=True)
def test_event_loop_gaps_during_background_compaction(benchmark, report, work_dir, source_log):
    name, source, size, _ = source_log
    figures = {}

    def background_pass():
        directory = fresh_copy(source, work_dir, "loop")
        manager = LogManager([directory.parent])
        manager.get_or_create_log("bench", 0, {"cleanup.policy": "compact",
                                               "segment.bytes": CONFIG["segment_bytes"]})
        cleaner = LogCleaner(manager, backoff_ms=10)

        async def main():
            task = asyncio.create_task(cleaner.run())
            gaps, last, started = [], time.monotonic(), time.monotonic()
            while cleaner.last_result is None:
                await asyncio.sleep(0.001)
                now = time.monotonic()
                gaps.append(now - last)
                last = now
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return gaps, time.monotonic() - started

        gaps, elapsed = uvloop.run(main())  # the broker's loop
        manager.shutdown()
        figures.update(pass_s=elapsed, max_gap_ms=max(gaps) * 1e3,
                       p99_gap_ms=sorted(gaps)[int(len(gaps) * 0.99)] * 1e3, ticks=len(gaps))

    benchmark.pedantic(background_pass, rounds=1)
    report(f"loop during compaction {name}", mb_s=size / figures["pass_s"] / 1e6, **figures)

"""bench/bench_backlog.py end to end on a tiny backlog (the broker in a
192 MB memory cgroup where the machine allows one, 384 MB behind), so that
the benchmark cannot rot. Not a performance test: the figures are checked
to be there and consistent with each other, not to be good."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300


@pytest.mark.parametrize("source", ["disk", "cache"])
def test_a_backlog_is_drained_while_a_producer_keeps_its_rate(tmp_path, source):
    from_cache = ["--from-cache"] if source == "cache" else []
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_backlog", "--memory-mb", "192", "--backlog-mb", "384",
         "--before-s", "2", "--rate-fraction", "0.1", "--data-root", str(tmp_path), "--json", *from_cache],
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    [run] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert run["catch_up_complete"] and run["producer_failures"] == 0
    assert run["backlog_mb"] >= 384 * 1.048 * 0.99  # MiB asked, MB reported
    assert run["peak_mb_s"] > 0 and run["catch_up_mb_s"] > 0
    assert abs(run["catch_up_mb_s"] * run["catch_up_s"] - run["backlog_mb"]) < 0.05 * run["backlog_mb"]
    assert run["before"]["n"] > 0 and run["during"]["n"] > 0
    assert run["during"]["p50_ms"] <= run["during"]["p99_ms"] <= run["during"]["p999_ms"]
    if run["memory_limit_mb"] is not None:  # the cgroup kept most of the backlog out of the cache
        assert run["disk_read_mb"] > 0
    if from_cache:  # the backlog just written is read from memory
        assert run["memory_limit_mb"] is None and not run["page_cache_dropped"]
        assert run["disk_read_mb"] < 0.1 * run["backlog_mb"]
    assert not list(tmp_path.iterdir())  # data removed

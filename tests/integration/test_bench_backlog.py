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
    nice = 19 if source == "cache" else 0  # the consumer gets only the CPU the others leave
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_backlog", "--memory-mb", "192", "--backlog-mb", "384",
         "--before-s", "2", "--rate-fraction", "0.1", "--data-root", str(tmp_path), "--json",
         "--consumer-nice", str(nice), *from_cache],
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    [run] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert run["catch_up_complete"] and run["producer_failures"] == 0
    assert run["backlog_mb"] >= 384 * 1.048 * 0.99  # MiB asked, MB reported
    assert run["peak_mb_s"] > 0 and run["catch_up_mb_s"] > 0
    assert abs(run["catch_up_mb_s"] * run["catch_up_s"] - run["backlog_mb"]) < 0.05 * run["backlog_mb"]
    # A new group waits group.initial.rebalance.delay.ms (3 s) before its
    # first message; the catch-up's time and rate leave that out.
    assert run["group_forming_s"] >= 2.5
    assert run["consumer_nice"] == nice  # as the consumer saw itself
    assert run["before"]["n"] > 0 and run["during"]["n"] > 0
    assert run["during"]["p50_ms"] <= run["during"]["p99_ms"] <= run["during"]["p999_ms"]
    if run["memory_limit_mb"] is not None:  # the cgroup kept most of the backlog out of the cache
        assert run["disk_read_mb"] > 0
    if from_cache:  # the backlog just written is read from memory
        assert run["memory_limit_mb"] is None and not run["page_cache_dropped"]
        assert run["disk_read_mb"] < 0.1 * run["backlog_mb"]
    assert not list(tmp_path.iterdir())  # data removed


def _run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.bench_backlog", "--data-root", str(tmp_path), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("target,args", [("tansu", ["--from-cache"]), ("kafka09", [])])
def test_a_peer_drains_the_same_backlog_in_turn_with_kcore(tmp_path, target, args):
    """Each round runs kcore, then the peer, each on its own data, with
    the peer's own clients (Kafka 0.9: confluent-kafka 2.0.2, installed
    into the bench cache on first use)."""
    done = _run(tmp_path, "--memory-mb", "64", "--backlog-mb", "64", "--before-s", "2", "--rate", "2000",
                "--json", "--target", "kcore", "--target", target, *args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [run["target"] for run in runs] == ["kcore", target]
    for run in runs:
        assert run["catch_up_complete"] and run["producer_failures"] == 0, run
        assert run["before"]["n"] > 0 and run["during"]["n"] > 0, run
    if target == "kafka09":  # its cgroup holds the page cache, its heap and the rest of its JVM
        assert runs[1]["memory_limit_mb"] in (None, 64 + 256 + 192)
    assert not list(tmp_path.iterdir())


def test_a_memory_only_peer_runs_from_the_page_cache_only(tmp_path):
    done = _run(tmp_path, "--target", "tansu")
    assert done.returncode == 2 and "tansu keeps its data in memory" in done.stderr

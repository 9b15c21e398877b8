"""`kcore bench run` on a broker that stamps its append times
(log.message.timestamp.type=LogAppendTime): each end-to-end latency is
split at the append, producer to append and append to consumer."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from kcore.bench import report
from tests.support.cli import kcore_command

RUN_TIMEOUT_S = 120
REPO = Path(__file__).resolve().parents[2]
HALF_MS = 0.5  # an append time is whole milliseconds; its middle is taken


def test_a_rate_run_splits_its_latency_at_the_brokers_append_time(tmp_path):
    out = tmp_path / "runs.jsonl"
    done = subprocess.run(kcore_command("bench", "run", "tiny-rate", "--out", str(out), "--no-progress",
                                        "--idle-timeout", "3",
                                        "--broker-config", "log.message.timestamp.type=LogAppendTime"),
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    record, = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["status"] == "ok", record["reason"]
    metrics = record["metrics"]
    assert metrics["latency_count"] == 1000
    for half in ("to_append", "from_append"):
        p50, p90, p99 = (metrics[f"latency_{half}_{name}_ms"] for name in ("p50", "p90", "p99"))
        assert 0 < p50 <= p90 <= p99 <= metrics["latency_max_ms"] + HALF_MS
    # The halves of one message add up to its whole, so their medians
    # cannot both lie above the whole's.
    assert min(metrics["latency_to_append_p50_ms"],
               metrics["latency_from_append_p50_ms"]) <= metrics["latency_p50_ms"]


def test_the_report_shows_the_split_only_for_runs_that_have_it():
    stat = (1.0, 1.0, 1.0, 1)  # an aggregate: median, min, max, n
    plain = {"rate": 20_000, "latency_p50_ms": stat, "broker_cpu_s_per_gb_e2e": stat}
    split = {**plain, "latency_to_append_p50_ms": stat, "latency_from_append_p99_ms": stat}
    assert not any("latency_to_append_p50_ms" in group for group in report.metric_groups([plain]))
    assert ["latency_to_append_p50_ms", "latency_from_append_p99_ms"] in report.metric_groups([split])

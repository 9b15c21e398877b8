"""`kcore bench run` on a broker that stamps its append times
(log.message.timestamp.type=LogAppendTime): each end-to-end latency is
split at the append, producer to append and append to consumer."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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

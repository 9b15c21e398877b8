"""The gate's workloads that need more than one plain broker, run for real
on a few thousand messages: RF 3 acks=all on a 3-broker cluster with a
real ZooKeeper, a TLS listener, a transactional producer with a
read_committed consumer. Each gets a broker (or cluster) of its own."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import kcore_command

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 240
# 30 MB a run: /proc reports CPU time in 10 ms ticks, and a broker
# spending ~1 CPU-s per GB produced spends ~3 ms on 3,000 messages, which
# can read as 0; on 30,000 it reads as ~30 ms.
MESSAGES = 30_000
TRANSACTION_MESSAGES = 10_000  # the txn workload's transaction_messages
WORKLOADS = ("3-brokers-16-partitions-rf3-acks-all-1kb-max", "1-topic-16-partitions-1kb-tls-max",
             "1-topic-16-partitions-1kb-txn-max")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "runs.jsonl"
    done = subprocess.run(kcore_command("bench", "run", *WORKLOADS, "--set", f"messages={MESSAGES}",
                                        "--out", str(out), "--no-progress", "--idle-timeout", "0"),
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return {r["workload"]["name"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_produces_and_consumes_every_message(records, name):
    record = records[name]
    assert record["status"] == "ok", record["reason"]
    metrics = record["metrics"]
    assert metrics["messages_produced"] == metrics["messages_consumed"] == MESSAGES
    assert metrics["produce_mb_s"] > 0 and metrics["broker_cpu_s_per_gb_produce"] > 0


def test_cluster_workload_measures_every_broker(records):
    cluster = records["3-brokers-16-partitions-rf3-acks-all-1kb-max"]
    single = records["1-topic-16-partitions-1kb-tls-max"]
    assert cluster["workload"]["brokers"] == 3 and cluster["workload"]["replication_factor"] == 3
    # three broker processes' RSS summed against one broker's
    assert cluster["metrics"]["broker_peak_rss_mb"] > 2 * single["metrics"]["broker_peak_rss_mb"]


def test_transactional_workload_commits_in_transactions(records):
    metrics = records["1-topic-16-partitions-1kb-txn-max"]["metrics"]
    assert metrics["transactions"] == MESSAGES // TRANSACTION_MESSAGES

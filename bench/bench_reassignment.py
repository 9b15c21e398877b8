"""How long moving a partition takes: a reassignment of one replica of a
partition holding ``--mb`` MB to a broker that has none of it.

One ZooKeeper and three kcore brokers on this machine (loopback). Each
round creates a topic with one partition on brokers [1, 2], fills it with
``--mb`` MB of 1 KiB values (confluent-kafka, acks=all), then runs
``kcore reassign-partitions --execute`` moving it to [2, 3] and polls
ListPartitionReassignments (kafka-python) every 50 ms until the move is
complete and Metadata names [2, 3], then checks broker 3's log holds the
bytes written. Reports the command's own run time (a Python start, a
Metadata and the AlterPartitionReassignments request),
the time from starting the command to completion, and MB/s = the
partition's bytes / that time. Broker 3 copies the log by fetching from
the leader, so the figure is follower catch-up plus the controller's
steps (LeaderAndIsr, ISR change, completion, StopReplica).

    .venv/bin/python -m bench.bench_reassignment [--mb 50] [--rounds 3] [--throttle B/S]

With ``--throttle`` the command sets Kafka's replication throttle
(``--execute --throttle``) and each round ends with ``--verify``, which
removes it; MB/s then sits near the throttle: 21 MB moved in 4.57 s and
3.84 s (4.6 and 5.5 MB/s) at ``--throttle 5000000``, against 0.31 s
(67 MB/s, the command's start included) without, ``--mb 20 --rounds 2``
on the same 2-core machine. A move can pass the rate by up to a fetch
(1 MiB) plus what the 11 s measuring window has left unused.

Measured on a 2-core machine (everything on it): 52 MB moved in a median
0.29 s from the command's start (3 rounds, 0.25-0.32 s; the command alone
0.23 s, mostly the Python start), 524 MB in 0.92 s (~750 MB/s once the
command has asked).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from kcore.testing import Cluster, ZooKeeperServer, kcore_command

VALUE_BYTES = 1024
POLL_S = 0.05
MOVE_TIMEOUT_S = 300.0
SETTINGS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "10000",
            "auto.leader.rebalance.enable": "false", "offsets.topic.num.partitions": "6"}


def fill(cluster: Cluster, topic: str, megabytes: int) -> int:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 5, "batch.size": 1 << 20})
    # Half random so the bytes are not all alike; no compression either way.
    value = os.urandom(VALUE_BYTES // 2) + bytes(VALUE_BYTES // 2)
    count = megabytes * (1 << 20) // VALUE_BYTES
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0, "the fill did not finish"
    return count * VALUE_BYTES


def move_round(cluster: Cluster, admin: KafkaAdminClient, root: Path, index: int,
               megabytes: int, throttle: int = -1) -> dict:
    topic = f"move-{index}"
    cluster.admin.create_topics([NewTopic(topic, num_partitions=1,
                                          replica_assignment=[[1, 2]])])[topic].result(30)
    cluster.wait_for(lambda: cluster.fully_replicated(topic, 1, 2), f"{topic} replicated")
    size = fill(cluster, topic, megabytes)
    plan = root / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 3]}]}))
    command = kcore_command("reassign-partitions", "--bootstrap-server", cluster.bootstrap,
                            "--reassignment-json-file", str(plan))
    start = time.monotonic()
    result = subprocess.run([*command, "--execute", "--throttle", str(throttle)],
                            capture_output=True, text=True, timeout=60)
    command_s = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    partition = TopicPartition(topic, 0)
    while time.monotonic() - start < MOVE_TIMEOUT_S:
        if partition not in admin.list_partition_reassignments([partition]):
            found = cluster.partitions(topic).get(0)
            if found is not None and list(found.replicas) == [2, 3]:
                break
        time.sleep(POLL_S)
    else:
        raise AssertionError(f"{topic} did not move in {MOVE_TIMEOUT_S:g}s")
    elapsed = time.monotonic() - start
    if throttle >= 0:
        verify = subprocess.run([*command, "--verify"], capture_output=True, text=True, timeout=60)
        assert "Throttle was removed." in verify.stdout, verify.stdout + verify.stderr
    copied = sum(f.stat().st_size for f in (cluster.brokers[3].data_dir / f"{topic}-0").glob("*.log"))
    assert copied >= size, f"broker 3 holds {copied} bytes of {topic}, not the {size} written"
    return {"round": index, "throttle": throttle, "mb": round(size / 1e6, 1),
            "copied_mb": round(copied / 1e6, 1),
            "command_s": round(command_s, 3), "move_s": round(elapsed, 3),
            "mb_per_s": round(size / 1e6 / elapsed, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=50, help="MB in the moved partition")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_S",
                        help="replication throttle of the moves (-1: none)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kcore-reassign-bench-"))
    zookeeper = ZooKeeperServer(root / "zookeeper").start()
    cluster = Cluster(root / "cluster", zookeeper.connect_string, 3, SETTINGS)
    admin = None
    try:
        cluster.start()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
        runs = []
        for index in range(args.rounds):
            run = move_round(cluster, admin, root, index, args.mb, args.throttle)
            print(json.dumps(run), flush=True)
            runs.append(run)
        print(json.dumps({"summary": "move", "mb": args.mb, "throttle": args.throttle, "rounds": len(runs),
                          "median_move_s": statistics.median(r["move_s"] for r in runs),
                          "median_mb_per_s": statistics.median(r["mb_per_s"] for r in runs),
                          "median_command_s": statistics.median(r["command_s"] for r in runs)}))
    finally:
        if admin is not None:
            admin.close()
        cluster.kill_all()
        zookeeper.kill()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

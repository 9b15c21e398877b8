"""Replication on three brokers: what RF 3 costs, how fast a follower
catches up, how long a partition is unwritable when its leader goes.

One ZooKeeper and three kcore brokers on this machine (loopback), sharing
its cores with the load generators. Three measurements, each repeated
``--rounds`` times:

1. Throughput, interleaved (A B C A B C ...) on the same cluster: topic
   ``rf1`` (replication factor 1) written with acks=1, topic ``rf3`` (RF
   3, min.insync.replicas=2) written with acks=all by the same producer
   settings, and ``rf3`` written with acks=all by idempotent producers; 8
   partitions, 1 KiB half-random values, confluent-kafka producers in their
   own processes (linger.ms 5, batch.size 1 MB). Reports msg/s, MB/s, ack
   latency p50/p99, the brokers' and producers' CPU, and the ratio RF 3 /
   RF 1 (target >= 50%). Measured here, librdkafka's idempotent producer
   spends ~3x the CPU per message once acknowledgements take tens of ms
   (13 vs 4 us; its in-flight limit of 5 requests is reached and it keeps
   waking up), which on two cores shared with three brokers costs the
   idempotent run about half its throughput: hence both acks=all rows.
2. Follower catch-up: one follower of ``rf3`` is stopped, ``--catch-up-mb``
   are written without it (acks=all still has two replicas), it starts
   again: MB/s = the bytes it was behind / the time from its listening to
   its return to every ISR. The brokers' CPU over the catch-up, per GB it
   was behind: the two leaders' (serving follower fetches) and the
   follower's (fetching and appending); then a consumer in this process
   reads the same offsets from the leaders, and their CPU per GB read is
   what serving a consumer costs (the target: a follower fetch costs the
   leader no more than a consumer's).
3. Failover: a producer writes one message every 5 ms to one partition
   (acks=all); its leader is SIGKILLed (or SIGTERMed: controlled shutdown),
   and the failover time is from the signal to the first acknowledgement
   after it. Targets: <= zookeeper.session.timeout.ms + 1 s after SIGKILL,
   <= 0.5 s after SIGTERM. The stopped broker is started again between
   rounds, and waited for until it is back in every ISR.

    .venv/bin/python -m bench.bench_replication
    .venv/bin/python -m bench.bench_replication --rounds 5 --messages 300000
    .venv/bin/python -m bench.bench_replication --skip-throughput --rounds 10
    .venv/bin/python -m bench.bench_replication --catch-up-only --catch-up-mb 500
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.bench_backlog import end_offsets
from bench.bench_durability import cpu_seconds, producer_main
from kcore.bench.idle import drop_page_cache
from kcore.testing import Cluster, ZooKeeperServer

PARTITIONS = 8
SESSION_TIMEOUT_MS = 6000
BROKER_SETTINGS = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                   "replica.lag.time.max.ms": "10000", "replica.fetch.backoff.ms": "200",
                   "controlled.shutdown.retry.backoff.ms": "200",
                   "auto.leader.rebalance.enable": "false",
                   "offsets.topic.num.partitions": "6"}


def start_cluster(root: Path) -> tuple[ZooKeeperServer, Cluster]:
    zookeeper = ZooKeeperServer(root / "zookeeper").start()
    cluster = Cluster(root / "cluster", zookeeper.connect_string, 3, BROKER_SETTINGS).start()
    cluster.create_topic("rf1", PARTITIONS, 1)
    cluster.create_topic("rf3", PARTITIONS, 3, {"min.insync.replicas": "2"})
    return zookeeper, cluster


# -- 1. throughput -------------------------------------------------------------------------
MODES = {  # mode -> (topic, acks, idempotent)
    "rf1-acks1": ("rf1", "1", False),
    "rf3-acksall": ("rf3", "all", False),
    "rf3-acksall-idempotent": ("rf3", "all", True),
}


def throughput_run(cluster: Cluster, mode: str, args) -> dict:
    topic, acks, idempotent = MODES[mode]
    settings = {"linger.ms": 5, "batch.size": 1_000_000, "acks": acks,
                "enable.idempotence": idempotent}
    context = mp.get_context("spawn")
    start, results = context.Event(), context.Queue()
    per_producer = args.messages // args.producers
    producers = [context.Process(target=producer_main, args=(
        cluster.bootstrap, per_producer, i * PARTITIONS // args.producers, settings, start,
        results, 0.0, topic, PARTITIONS)) for i in range(args.producers)]
    for process in producers:
        process.start()
    time.sleep(1.0)
    pids = [b.process.pid for b in cluster.brokers.values()]
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    start.set()
    outcomes = [results.get(timeout=600) for _ in producers]
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    for process in producers:
        process.join(30)
    seconds = max(o[1] for o in outcomes) - min(o[0] for o in outcomes)
    latencies = sorted(x for o in outcomes for x in o[2])
    delivered = len(latencies)
    return {"mode": mode, "messages": delivered,
            "failures": sum(o[3] for o in outcomes), "msg_per_s": round(delivered / seconds),
            "mb_per_s": round(delivered * 1024 / seconds / 1e6, 1),
            "ack_p50_ms": round(latencies[len(latencies) // 2] * 1e3, 2),
            "ack_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1e3, 2),
            "brokers_cpu_s": round(cpu, 2), "producers_cpu_s": round(sum(o[4] for o in outcomes), 2)}


# -- 2. follower catch-up ------------------------------------------------------------------
def catch_up_run(cluster: Cluster, args) -> dict:
    # The last round's writes, written back by the kernel while the
    # follower catches up, made its copies into the page cache ~4x dearer:
    # 2.5-4.4 CPU-s per GB it was behind against 0.8-1.1 (perf: in
    # copy_folio_from_iter_atomic). Each round starts with them on disk.
    drop_page_cache()
    leader = cluster.leader("rf3", 0)
    follower_id = next(b for b in cluster.brokers if b != leader)
    follower = cluster.brokers[follower_id]
    follower.stop()
    cluster.wait_for(lambda: all(follower_id not in p.isrs for p in cluster.partitions("rf3").values()),
                     "the stopped follower left the ISRs", timeout=60)
    starts = end_offsets(cluster.bootstrap, "rf3", PARTITIONS)
    messages = int(args.catch_up_mb * 1e6 / 1024)
    context = mp.get_context("spawn")
    start, results = context.Event(), context.Queue()
    settings = {"linger.ms": 5, "batch.size": 1_000_000, "acks": "all", "enable.idempotence": True}
    process = context.Process(target=producer_main, args=(
        cluster.bootstrap, messages, 0, settings, start, results, 0.0, "rf3", PARTITIONS))
    process.start()
    start.set()
    outcome = results.get(timeout=600)
    process.join(30)
    behind = len(outcome[2]) * 1024
    leaders = [broker for broker_id, broker in cluster.brokers.items() if broker_id != follower_id]
    follower.start()
    began = time.monotonic()
    leaders_before = sum(cpu_seconds(broker.process.pid) for broker in leaders)
    follower_before = cpu_seconds(follower.process.pid)
    cluster.wait_for(lambda: cluster.fully_replicated("rf3", PARTITIONS, 3),
                     "the follower caught up", timeout=300)
    seconds = time.monotonic() - began
    leaders_cpu = sum(cpu_seconds(broker.process.pid) for broker in leaders) - leaders_before
    follower_cpu = cpu_seconds(follower.process.pid) - follower_before
    read, read_cpu = _consumer_read(cluster, "rf3", starts, leaders)
    return {"mode": "catch-up", "behind_mb": round(behind / 1e6, 1), "seconds": round(seconds, 2),
            "mb_per_s": round(behind / seconds / 1e6, 1),
            "leaders_cpu_s_per_gb": round(leaders_cpu / (behind / 1e9), 3),
            "follower_cpu_s_per_gb": round(follower_cpu / (behind / 1e9), 3),
            "consumer_read_mb": round(read / 1e6, 1),
            "consumer_leaders_cpu_s_per_gb": round(read_cpu / (read / 1e9), 3)}


def _consumer_read(cluster: Cluster, topic: str, starts: dict[int, int],
                   leaders: list) -> tuple[int, float]:
    """(payload bytes, the leaders' CPU seconds) of reading every partition
    of ``topic`` from ``starts`` to its end, as a consumer (bounded: 300 s)."""
    from confluent_kafka import Consumer, TopicPartition
    ends = end_offsets(cluster.bootstrap, topic, PARTITIONS)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "bench-read",
                         "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    left = {index for index in range(PARTITIONS) if ends[index] > starts[index]}
    size = 0
    try:
        consumer.assign([TopicPartition(topic, index, starts[index]) for index in left])
        before = sum(cpu_seconds(broker.process.pid) for broker in leaders)
        deadline = time.monotonic() + 300
        while left and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is None:
                    size += len(message.value())
                    if message.offset() + 1 >= ends[message.partition()]:
                        left.discard(message.partition())
        cpu = sum(cpu_seconds(broker.process.pid) for broker in leaders) - before
    finally:
        consumer.close()
    if left:
        raise TimeoutError(f"partitions {sorted(left)} not read to their end")
    return size, cpu


# -- 3. failover -----------------------------------------------------------------------------
class Pinger:
    """One acks=all message every 5 ms to one partition; the times of the
    acknowledgements, from librdkafka's delivery reports."""

    def __init__(self, cluster: Cluster, topic: str, partition: int):
        from confluent_kafka import Producer
        self.acks: list[tuple[float, float]] = []  # (sent, acknowledged)
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 0,
                                   "topic.metadata.refresh.interval.ms": 100,
                                   "retry.backoff.ms": 20, "retry.backoff.max.ms": 100,
                                   "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100})
        self._topic, self._partition = topic, partition
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 600
        while not self._stop.is_set() and time.monotonic() < deadline:
            sent = time.monotonic()
            self._producer.produce(self._topic, b"ping", partition=self._partition,
                                   on_delivery=lambda err, msg, sent=sent: err is None and
                                   self.acks.append((sent, time.monotonic())))
            self._producer.poll(0.005)
        self._producer.flush(60)

    def first_ack_after(self, moment: float, timeout: float = 60) -> float:
        """When the first message sent after ``moment`` was acknowledged
        (a message sent before may be acknowledged by the old leader just
        after the signal, which says nothing of the new one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            later = [acked for sent, acked in self.acks if sent > moment]
            if later:
                return min(later)
            time.sleep(0.005)
        raise TimeoutError("no acknowledgement after the failure")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


def failover_run(cluster: Cluster, how: str) -> dict:
    partition = 0
    pinger = Pinger(cluster, "rf3", partition)
    try:
        cluster.wait_for(lambda: len(pinger.acks) > 50, "pings flow")
        leader_id = cluster.leader("rf3", partition)
        broker = cluster.brokers[leader_id]
        moment = time.monotonic()
        if how == "sigkill":
            broker.kill()
        else:
            stopper = threading.Thread(target=broker.stop, daemon=True)
            stopper.start()
        seconds = pinger.first_ack_after(moment) - moment
        if how != "sigkill":
            stopper.join(60)
    finally:
        pinger.stop()
    broker.start()
    cluster.wait_for(lambda: cluster.fully_replicated("rf3", PARTITIONS, 3),
                     "the stopped leader back in every ISR", timeout=120)
    return {"mode": f"failover-{how}", "seconds": round(seconds, 3)}


def summarize(runs: list[dict]) -> list[str]:
    lines = []
    by_mode: dict[str, list[dict]] = {}
    for run in runs:
        by_mode.setdefault(run["mode"], []).append(run)
    rates = {}
    for mode in MODES:
        mine = by_mode.get(mode)
        if mine:
            m = {k: statistics.median(r[k] for r in mine)
                 for k in ("msg_per_s", "mb_per_s", "ack_p50_ms", "ack_p99_ms", "brokers_cpu_s",
                           "producers_cpu_s")}
            rates[mode] = m["msg_per_s"]
            lines.append(f"{mode:23} {m['msg_per_s']:8.0f} msg/s {m['mb_per_s']:6.1f} MB/s "
                         f"p50 {m['ack_p50_ms']:7.1f} ms p99 {m['ack_p99_ms']:7.1f} ms "
                         f"CPU-s brokers {m['brokers_cpu_s']:5.2f} producers "
                         f"{m['producers_cpu_s']:5.2f} (medians of {len(mine)})")
    for mode in ("rf3-acksall", "rf3-acksall-idempotent"):
        if mode in rates and "rf1-acks1" in rates:
            lines.append(f"{mode} is {rates[mode] / rates['rf1-acks1']:.0%} of rf1-acks1 "
                         "(target >= 50%)")
    if "catch-up" in by_mode:
        mine = by_mode["catch-up"]
        values = [r["mb_per_s"] for r in mine]
        lines.append(f"follower catch-up: median {statistics.median(values):.1f} MB/s "
                     f"(runs: {values})")
        served = [r["leaders_cpu_s_per_gb"] for r in mine]
        consumed = [r["consumer_leaders_cpu_s_per_gb"] for r in mine]
        lines.append(f"leaders' CPU-s per GB: serving the follower {statistics.median(served):.3f} "
                     f"{served}, serving a consumer {statistics.median(consumed):.3f} {consumed}; "
                     f"the follower's {statistics.median(r['follower_cpu_s_per_gb'] for r in mine):.3f}")
    for how, target in (("sigkill", SESSION_TIMEOUT_MS / 1000 + 1), ("sigterm", 0.5)):
        mine = by_mode.get(f"failover-{how}")
        if mine:
            values = [r["seconds"] for r in mine]
            lines.append(f"failover after {how.upper()}: median {statistics.median(values):.2f} s, "
                         f"max {max(values):.2f} s (target <= {target:g} s; runs: {values})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=200_000, help="per throughput run")
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--catch-up-mb", type=float, default=200.0)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--catch-up-only", action="store_true",
                        help="only the follower catch-up (and the consumer read after it)")
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="kcore-replication-"))
    zookeeper, cluster = start_cluster(root)
    runs: list[dict] = []
    try:
        for round_index in range(args.rounds):
            steps = [] if args.skip_throughput or args.catch_up_only else [
                lambda mode=mode: throughput_run(cluster, mode, args) for mode in MODES]
            steps += [] if args.skip_throughput else [lambda: catch_up_run(cluster, args)]
            steps += [] if args.catch_up_only else [lambda: failover_run(cluster, "sigkill"),
                                                    lambda: failover_run(cluster, "sigterm")]
            for step in steps:
                run = step()
                run["round"] = round_index
                runs.append(run)
                print(json.dumps(run) if args.json else f"round {round_index}: {run}", flush=True)
    finally:
        cluster.kill_all()
        zookeeper.kill()
        shutil.rmtree(root, ignore_errors=True)
    print(f"workload: 3 brokers, {PARTITIONS} partitions, 1 KiB messages, "
          f"{args.producers} producer process(es), {args.messages} messages per throughput run, "
          f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}")
    for line in summarize(runs):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Durability modes side by side: acks=all produce throughput and ack latency.

Workload: one topic of 16 partitions, 1 KiB half-random messages, acks=all,
confluent-kafka producers in their own processes sending as fast as they
can (messages spread round-robin over the partitions). Modes, each a fresh
broker and data dir on the same disk, run interleaved (A B C D A B C D ...):

  page-cache     default: writes reach the page cache, no fsync before acks
  naive-fsync    flush.messages=1 with KCORE_SYNCER=inline: each append
                 flushes its log before its ack, on the event loop: the
                 segment and its two index files fdatasynced, as Kafka's
                 LogSegment.flush does (Kafka's behaviour for flush.messages=1)
  group-io_uring flush.messages=1, group commit over io_uring
  group-thread   flush.messages=1, group commit over the thread pool

Per run: msg/s and MB/s (10^6 bytes of values) over the wall time from the
first send to the last ack, ack latency p50/p99 (send to delivery report,
as librdkafka times it), broker and producer CPU seconds. ``--rate`` paces
the producers instead, so the latencies are the broker's, not a queue's.
The summary gives medians over rounds and the ratios kcore's durability
targets are set on (group commit >= 5x naive and >= 50% of page-cache).
One JSON line per run with --json.

The default workload is 8 producers with Kafka's default batch.size (16
KiB) and linger.ms=1, 400k messages per run, 3 rounds: enough concurrent
requests (8 x 5 in flight) for group commit to share each fsync among ~10
appends. Fewer producers share it among fewer (4: ~5), more bytes per batch
make naive fsync cheaper per message (1 MB batches: naive is at ~57% of
page-cache mode already)::

    .venv/bin/python -m bench.bench_durability
    .venv/bin/python -m bench.bench_durability --producers 4
    .venv/bin/python -m bench.bench_durability --producers 1 --batch-bytes 1000000 --linger-ms 5
    .venv/bin/python -m bench.bench_durability --rate 15000 --messages 120000
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcore.testing import free_port, kcore_command

TOPIC = "durability"
PARTITIONS = 16
MODES = {
    "page-cache": ({}, "auto"),
    "naive-fsync": ({"log.flush.interval.messages": "1"}, "inline"),
    "group-io_uring": ({"log.flush.interval.messages": "1"}, "io_uring"),
    "group-thread": ({"log.flush.interval.messages": "1"}, "thread"),
}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Broker:
    """A kcore broker subprocess in ``mode`` with its own data dir."""

    def __init__(self, root: Path, mode: str):
        overrides, syncer = MODES[mode]
        self.port = free_port()
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=root))
        command = [*kcore_command("broker"), "--log-level", "INFO",
                   "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                   "--override", f"log.dirs={self.data_dir / 'data'}",
                   "--override", f"num.partitions={PARTITIONS}"]
        for key, value in overrides.items():
            command += ["--override", f"{key}={value}"]
        self.log_path = self.data_dir / "broker.log"
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                            env={**os.environ, "KCORE_SYNCER": syncer})
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"broker did not start:\n{self.log_path.read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def group_commit_line(self) -> str | None:
        """The syncer's counters, logged when the broker stops."""
        for line in self.log_path.read_text().splitlines():
            if "group commit (" in line and "rounds" in line:
                return line.split(": ", 1)[1].strip()
        return None

    def durability_line(self) -> str:
        for line in self.log_path.read_text().splitlines():
            if "durability:" in line:
                return line.split("durability:", 1)[1].strip()
        return "?"

    def stop(self) -> str | None:
        """Stop cleanly; returns the group-commit counters line, if any."""
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        counters = self.group_commit_line()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return counters


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)


def producer_main(bootstrap: str, count: int, first_partition: int, settings: dict, start, results,
                  rate: float = 0.0, topic: str = TOPIC, partitions: int = PARTITIONS) -> None:
    """One load generator: ``count`` messages, acks=all unless ``settings``
    say otherwise, as fast as it can or at ``rate`` msg/s; reports (first
    send, last ack, ack latencies in seconds, failures, CPU seconds)."""
    from confluent_kafka import Producer
    latencies: list[float] = []
    failures = [0]
    clock = time.perf_counter

    def delivered(error, message):
        # librdkafka times each message itself (produce() to its ack), so
        # the loop below needs no clock read nor closure per message: the
        # generator's own CPU per message, which shares the 2 cores with
        # the broker, stays small.
        if error is None:
            latencies.append(message.latency())
        else:
            failures[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576, "on_delivery": delivered,
                         **settings})
    payloads = [os.urandom(512) + bytes((i + j) % 251 for j in range(512)) for i in range(64)]
    produce = producer.produce

    producer.list_topics(topic, timeout=30)
    start.wait()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    began = clock()
    for i in range(count):
        value, partition = payloads[i & 63], (first_partition + i) % partitions
        while True:
            try:
                produce(topic, value, partition=partition)
                break
            except BufferError:
                producer.poll(0.001)
        if i % 64 == 0:
            producer.poll(0)
            while rate:  # poll returns at the first delivery report: loop to the send time
                ahead = began + i / rate - clock()
                if ahead <= 0:
                    break
                producer.poll(ahead)
    producer.flush(300)
    ended = clock()
    usage = resource.getrusage(resource.RUSAGE_SELF)  # librdkafka's threads included
    results.put((began, ended, latencies, failures[0], usage.ru_utime + usage.ru_stime - cpu_before))


def run_once(root: Path, mode: str, args) -> dict:
    broker = Broker(root, mode)
    run: dict = {}
    try:
        create_topic(broker.bootstrap)
        settings = {"linger.ms": args.linger_ms, "batch.size": args.batch_bytes,
                    "enable.idempotence": True}
        context = mp.get_context("spawn")
        start, results = context.Event(), context.Queue()
        per_producer = args.messages // args.producers
        producers = [context.Process(target=producer_main, args=(
            broker.bootstrap, per_producer, i * PARTITIONS // args.producers, settings, start, results,
            args.rate / args.producers))
            for i in range(args.producers)]
        for process in producers:
            process.start()
        time.sleep(1.0)  # producers connected and have the topic's metadata
        cpu_before = cpu_seconds(broker.process.pid)
        start.set()
        outcomes = [results.get(timeout=600) for _ in producers]
        cpu = cpu_seconds(broker.process.pid) - cpu_before
        for process in producers:
            process.join(30)
        began = min(o[0] for o in outcomes)
        ended = max(o[1] for o in outcomes)
        latencies = sorted(x for o in outcomes for x in o[2])
        seconds = ended - began
        delivered = len(latencies)
        run = {"mode": mode, "via": broker.durability_line(), "messages": delivered,
                "failures": sum(o[3] for o in outcomes), "seconds": round(seconds, 3),
                "msg_per_s": round(delivered / seconds), "mb_per_s": round(delivered * 1024 / seconds / 1e6, 1),
                "ack_p50_ms": round(latencies[len(latencies) // 2] * 1e3, 2),
                "ack_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1e3, 2),
                "broker_cpu_s": round(cpu, 2),
                "producer_cpu_s": round(sum(o[4] for o in outcomes), 2)}
        return run
    finally:
        run["group_commit"] = broker.stop()


def summarize(runs: list[dict], modes: list[str]) -> list[str]:
    lines = [f"{'mode':16} {'msg/s':>9} {'MB/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'cpu s':>6}"
             f"  (medians of {len(runs) // len(modes)})"]
    medians = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        m = {key: statistics.median(r[key] for r in mine)
             for key in ("msg_per_s", "mb_per_s", "ack_p50_ms", "ack_p99_ms", "broker_cpu_s")}
        medians[mode] = m
        lines.append(f"{mode:16} {m['msg_per_s']:9.0f} {m['mb_per_s']:7.1f} {m['ack_p50_ms']:8.2f} "
                     f"{m['ack_p99_ms']:8.2f} {m['broker_cpu_s']:6.2f}")
    for mode in ("group-io_uring", "group-thread"):
        if mode in medians and "naive-fsync" in medians and "page-cache" in medians:
            rate = medians[mode]["msg_per_s"]
            lines.append(f"{mode}: {rate / medians['naive-fsync']['msg_per_s']:.2f}x naive-fsync "
                         f"(target >= 5), {rate / medians['page-cache']['msg_per_s']:.0%} of page-cache "
                         f"(target >= 50%)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=400_000, help="per run, over all producers")
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--rate", type=float, default=0.0,
                        help="msg/s over all producers (0: as fast as they can); ack latency at a fixed load")
    parser.add_argument("--linger-ms", type=int, default=1)
    parser.add_argument("--batch-bytes", type=int, default=16_384)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    parser.add_argument("--data-root", default=None, help="where data dirs go (default: a temp dir on /tmp's disk)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per run")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    root = Path(tempfile.mkdtemp(prefix="kcore-durability-", dir=args.data_root))
    runs = []
    try:
        for round_index in range(args.rounds):
            for mode in modes:
                run = run_once(root, mode, args)
                run["round"] = round_index
                runs.append(run)
                print(json.dumps(run) if args.json else
                      f"round {round_index} {mode:16} {run['msg_per_s']:8d} msg/s "
                      f"p99 {run['ack_p99_ms']:7.2f} ms  [{run['via']}]"
                      + (f" [{run['group_commit']}]" if run.get("group_commit") else ""), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"workload: {PARTITIONS} partitions, 1 KiB messages, acks=all, idempotent, "
          f"{args.producers} producer(s), rate={args.rate or 'max'}, linger.ms={args.linger_ms}, "
          f"batch.size={args.batch_bytes}, "
          f"{args.messages} messages per run")
    for line in summarize(runs, modes):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

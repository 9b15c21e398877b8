"""Backlog drain: a consumer group that fell behind by more than the page
cache holds catches up from disk while producers keep writing.

Kafka's design point: a reader far behind hits the disk, and the writers,
who touch only the tail of the log (still in the page cache), should not
notice. One run:

1. A kcore broker starts in a memory cgroup limited to ``--memory-mb``
   (v1 ``memory.limit_in_bytes`` or v2 ``memory.max``; the page cache the
   broker's writes fill is charged to it, so it keeps at most that much of
   the log cached, less its own ~80 MB). Without a writable cgroup the run says so and reads come from
   the page cache.
2. Backlog: one producer writes ``--backlog-mb`` (default 4x the memory
   limit) as fast as it can; that rate is the peak. The page cache is then
   written back and dropped (as root).
3. A producer sends at ``--rate-fraction`` (default 0.5) of the peak for
   ``--before-s`` seconds alone: its acknowledgement latencies "before".
4. A consumer group with no committed offsets starts from the earliest
   offset and reads until it has every message of the backlog; the
   producer keeps its rate: latencies "during", the catch-up MB/s, and the
   bytes the broker read from the block device (``/proc/PID/io``).

``--from-cache`` skips the cgroup and the dropped cache: the same run with
every read served from memory, so that what remains of the producer's
slowdown is the CPU the catch-up takes, not the disk.

Figures: peak MB/s, catch-up MB/s, producer p50/p99/p99.9 before and
during and their ratio (during / before: near 1 means the writers did not
notice), disk bytes read over backlog bytes. One JSON line per run with
``--json``::

    .venv/bin/python -m bench.bench_backlog
    .venv/bin/python -m bench.bench_backlog --memory-mb 256 --backlog-mb 1024 --rounds 2
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kcore.bench.idle import drop_page_cache
from kcore.testing.broker import BrokerProcess

TOPIC = "backlog"
PARTITIONS = 16
MESSAGE_BYTES = 1024
CGROUP_V1 = Path("/sys/fs/cgroup/memory")
CGROUP_V2 = Path("/sys/fs/cgroup")


class MemoryCgroup:
    """A memory cgroup of its own (v1 where the ``memory`` controller is
    mounted on its own, else v2), or None where none can be made."""

    def __init__(self, limit_bytes: int):
        v1 = CGROUP_V1.is_dir()
        parent = CGROUP_V1 if v1 else CGROUP_V2
        if not v1 and "memory" not in (CGROUP_V2 / "cgroup.controllers").read_text().split():
            raise OSError("no memory controller")
        self.path = parent / f"kcore-backlog-{os.getpid()}"
        self.path.mkdir()
        self._limit, self._peak = (("memory.limit_in_bytes", "memory.max_usage_in_bytes") if v1
                                   else ("memory.max", "memory.peak"))
        (self.path / self._limit).write_text(str(limit_bytes))

    @classmethod
    def make(cls, limit_bytes: int) -> MemoryCgroup | None:
        try:
            return cls(limit_bytes)
        except OSError as error:
            print(f"no memory cgroup ({error}): reads of the backlog may come from the page cache",
                  file=sys.stderr)
            return None

    def max_usage_bytes(self) -> int | None:
        try:
            return int((self.path / self._peak).read_text())
        except OSError:  # memory.peak is new in Linux 5.19
            return None

    def remove(self) -> None:
        for _ in range(50):  # a group can only go once its last process has
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def start_broker(data_dir: Path, cgroup: MemoryCgroup | None) -> BrokerProcess:
    """A kcore broker, inside ``cgroup`` before it touches a page."""
    prefix = () if cgroup is None else (
        "sh", "-c", f'echo $$ > {cgroup.path}/cgroup.procs && exec "$@"', "sh")
    return BrokerProcess(data_dir, {"http.listeners": "", "schema.registry.listeners": ""},
                         prefix=prefix).start()


def read_bytes(broker: BrokerProcess) -> int:
    """Bytes the broker caused to be read from the block device."""
    assert broker.process is not None
    for line in Path(f"/proc/{broker.process.pid}/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)


def payloads() -> list[bytes]:
    """Half-random 1 KiB values, as the other workloads use."""
    return [os.urandom(MESSAGE_BYTES // 2) + bytes(MESSAGE_BYTES // 2) for _ in range(64)]


def fill_backlog(bootstrap: str, count: int) -> float:
    """``count`` messages as fast as one producer can; their MB/s."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "acks": "1", "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    values = payloads()
    producer.list_topics(TOPIC, timeout=30)
    began = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(TOPIC, values[i & 63], partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError("backlog not delivered")
    return count * MESSAGE_BYTES / (time.perf_counter() - began) / 1e6


def paced_producer(bootstrap: str, rate: float, start, stop, results) -> None:
    """Sends at ``rate`` msg/s from ``start`` until ``stop``; reports
    (acknowledgement time, latency) pairs in seconds and the failures."""
    from confluent_kafka import Producer
    acks: list[tuple[float, float]] = []
    failures = [0]
    clock = time.time

    def delivered(error, message):
        if error is None:
            acks.append((clock(), message.latency()))
        else:
            failures[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "acks": "1", "on_delivery": delivered,
                         "queue.buffering.max.messages": 1_000_000})
    values = payloads()
    producer.list_topics(TOPIC, timeout=30)
    start.wait()
    began, sent = time.perf_counter(), 0
    while not stop.is_set():
        due = began + sent / rate
        ahead = due - time.perf_counter()
        if ahead > 0:
            producer.poll(min(ahead, 0.01))
            continue
        try:
            producer.produce(TOPIC, values[sent & 63], partition=sent % PARTITIONS)
            sent += 1
        except BufferError:
            producer.poll(0.001)
        if sent % 64 == 0:
            producer.poll(0)
    producer.flush(60)
    results.put((acks, failures[0], sent))


def catch_up(bootstrap: str, backlog: dict[int, int], results) -> None:
    """A new group from the earliest offset until it holds every message
    below ``backlog`` (partition -> offset); reports (start, end, bytes)."""
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"backlog-{os.getpid()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": True,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 1_048_576})
    consumer.subscribe([TOPIC])
    began = time.time()
    size, left = 0, dict(backlog)
    deadline = time.monotonic() + 600
    while left and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            if message.error() is not None:
                continue
            partition, offset = message.partition(), message.offset() or 0
            if partition in left and offset < backlog[partition]:
                size += len(message.value() or b"")
                if offset + 1 >= backlog[partition]:
                    del left[partition]
    ended = time.time()
    consumer.close()
    results.put((began, ended, size, bool(left)))


def end_offsets(bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "backlog-offsets"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        return {"n": 0}
    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1e3, 2)
    return {"n": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "p999_ms": at(0.999)}


def run_once(root: Path, args) -> dict:
    cgroup = None if args.from_cache else MemoryCgroup.make(args.memory_mb << 20)
    broker = start_broker(Path(tempfile.mkdtemp(prefix="backlog-", dir=root)) / "data", cgroup)
    try:
        create_topic(broker.bootstrap)
        count = (args.backlog_mb << 20) // MESSAGE_BYTES
        peak_mb_s = fill_backlog(broker.bootstrap, count)
        backlog = end_offsets(broker.bootstrap)
        dropped = False if args.from_cache else drop_page_cache()
        rate = args.rate or peak_mb_s * 1e6 / MESSAGE_BYTES * args.rate_fraction
        context = mp.get_context("spawn")
        start, stop, produced, consumed = context.Event(), context.Event(), context.Queue(), context.Queue()
        producer = context.Process(target=paced_producer,
                                   args=(broker.bootstrap, rate, start, stop, produced))
        producer.start()
        time.sleep(1.0)  # connected, with the topic's metadata
        start.set()
        time.sleep(args.before_s)
        read_before = read_bytes(broker)
        consumer = context.Process(target=catch_up, args=(broker.bootstrap, backlog, consumed))
        consumer.start()
        began, ended, size, unfinished = consumed.get(timeout=900)
        read_during = read_bytes(broker) - read_before
        stop.set()
        acks, failures, sent = produced.get(timeout=120)
        producer.join(30)
        consumer.join(30)
        warm = min(t for t, _ in acks) + 1.0 if acks else 0.0  # the first second: connection warm-up
        before = [latency for t, latency in acks if warm <= t < began]
        during = [latency for t, latency in acks if began <= t <= ended]
        run = {"memory_limit_mb": args.memory_mb if cgroup else None, "page_cache_dropped": dropped,
               "backlog_mb": round(sum(backlog.values()) * MESSAGE_BYTES / 1e6, 1),
               "peak_mb_s": round(peak_mb_s, 1), "rate_msg_s": round(rate),
               "catch_up_mb_s": round(size / max(ended - began, 1e-9) / 1e6, 1),
               "catch_up_s": round(ended - began, 2), "catch_up_complete": not unfinished,
               "disk_read_mb": round(read_during / 1e6, 1),
               "before": percentiles(before), "during": percentiles(during),
               "producer_failures": failures, "messages_sent": sent}
        peak = cgroup.max_usage_bytes() if cgroup is not None else None
        if peak is not None:
            run["cgroup_max_usage_mb"] = round(peak / 1e6, 1)
        if run["before"].get("p99_ms") and run["during"].get("p99_ms"):
            run["p99_during_over_before"] = round(run["during"]["p99_ms"] / run["before"]["p99_ms"], 2)
        return run
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir.parent, ignore_errors=True)
        if cgroup is not None:
            cgroup.remove()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--memory-mb", type=int, default=512, help="the broker's cgroup memory limit")
    parser.add_argument("--backlog-mb", type=int, default=0, help="default: 4x --memory-mb")
    parser.add_argument("--rate-fraction", type=float, default=0.5, help="of the peak produce rate")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="msg/s of the paced producer instead of a fraction of the peak")
    parser.add_argument("--before-s", type=float, default=5.0)
    parser.add_argument("--from-cache", action="store_true",
                        help="no memory cgroup and no dropped cache: the same catch-up from the page cache, "
                             "which tells what the disk reads add to the producer's latency")
    parser.add_argument("--data-root", default=None, help="where data dirs go (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per run")
    args = parser.parse_args(argv)
    args.backlog_mb = args.backlog_mb or 4 * args.memory_mb
    root = Path(tempfile.mkdtemp(prefix="kcore-backlog-", dir=args.data_root))
    try:
        for round_index in range(args.rounds):
            run = run_once(root, args)
            run["round"] = round_index
            print(json.dumps(run) if args.json else
                  f"round {round_index}: backlog {run['backlog_mb']} MB (cgroup "
                  f"{run['memory_limit_mb']} MB), peak {run['peak_mb_s']} MB/s, producer at "
                  f"{run['rate_msg_s']} msg/s; catch-up {run['catch_up_mb_s']} MB/s in "
                  f"{run['catch_up_s']} s, {run['disk_read_mb']} MB read from disk; producer p50/p99/p99.9 "
                  f"before {run['before']}, during {run['during']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""End-to-end broker benchmark with confluent-kafka as the load generator.

Workload (issue 3 / PERF.md): 1 KiB half-random messages, 16 partitions,
linger.ms 5, batch.size 1 MB, acks=1.
  1. produce N messages at max rate -> produce MB/s, broker CPU-s per GB
  2. consume them all back -> consume MB/s, broker CPU-s per GB fetched
  3. fixed rate (default 20k msg/s) for D seconds with the consumer in its
     own process -> end-to-end latency p50/p99/p99.9 from a timestamp
     carried in each message
Broker CPU comes from /proc/<pid>/stat (utime+stime) around each phase and
peak RSS from VmHWM. Prints one JSON line per run.

    python -m bench.broker_bench --messages 200000 --rate 20000 --seconds 8
    python -m bench.broker_bench --bootstrap 127.0.0.1:9092   # an external broker
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
LATENCY_HEADER = struct.Struct(">d")  # send time (time.time()) at the message start


def payload(size: int, seed: int) -> bytes:
    """Half random, half repetitive: compressible like real data (OMB)."""
    rnd = os.urandom(size // 2)
    return rnd + bytes((seed + i) % 251 for i in range(size - len(rnd)))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def producer_config(bootstrap: str, acks: str) -> dict:
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
            "acks": acks, "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none"}


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce_max(bootstrap: str, topic: str, count: int, size: int, acks: str) -> float:
    from confluent_kafka import Producer
    producer = Producer(producer_config(bootstrap, acks))
    producer.list_topics(topic, timeout=10)  # partitions known before the first produce()
    values = [payload(size, i) for i in range(64)]
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, values[i % 64], partition=i % 16)
                break
            except BufferError:
                producer.poll(0.001)
        if i % 10000 == 0:
            producer.poll(0)
    producer.flush(120)
    return time.perf_counter() - start


def consume_all(bootstrap: str, topic: str, count: int, partitions: int) -> float:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
                         "max.partition.fetch.bytes": 10_485_760})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen < count:
        raise RuntimeError(f"consumed {seen} of {count}")
    return elapsed


def latency_reader(bootstrap: str, topic: str, count: int, partitions: int, queue) -> None:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, p, -1) for p in range(partitions)])  # -1: latest
    queue.put("ready")
    latencies = []
    deadline = time.monotonic() + 120
    while len(latencies) < count and time.monotonic() < deadline:
        # poll(), not consume(n): a batch call returns only once n messages
        # are in or its timeout passes, which would add up to n/rate seconds.
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            sent, = LATENCY_HEADER.unpack_from(message.value())
            latencies.append((time.time() - sent) * 1000)
    consumer.close()
    queue.put(latencies)


def produce_at_rate(bootstrap: str, topic: str, rate: int, seconds: float, size: int) -> int:
    from confluent_kafka import Producer
    producer = Producer(producer_config(bootstrap, "1"))
    producer.list_topics(topic, timeout=10)
    filler = payload(size - LATENCY_HEADER.size, 7)
    sent = 0
    start = time.perf_counter()
    total = int(rate * seconds)
    while sent < total:
        due = start + sent / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(min(due - now, 0.001))
            continue
        producer.produce(topic, LATENCY_HEADER.pack(time.time()) + filler, partition=sent % 16)
        sent += 1
        producer.poll(0)
    producer.flush(60)
    return sent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def run(args) -> dict:
    from tests.support import BrokerProcess
    workdir = Path(tempfile.mkdtemp(prefix="kcore-bench-"))
    broker = None
    try:
        if args.bootstrap:
            bootstrap, pid = args.bootstrap, args.broker_pid
        else:
            broker = BrokerProcess(workdir / "data", {"num.partitions": "16"}).start()
            bootstrap, pid = broker.bootstrap, broker.process.pid
        result = {"workload": {"message_bytes": args.size, "partitions": 16, "messages": args.messages,
                               "acks": args.acks, "linger_ms": 5, "batch_size": 1_000_000,
                               "rate": args.rate, "rate_seconds": args.seconds},
                  "broker": "kcore" if broker else bootstrap}
        gigabytes = args.messages * args.size / 1e9
        # Topic creation (segment and index preallocation) is admin work,
        # kept out of the produce phase's CPU figure.
        create_topic(bootstrap, "bench-max", 16)
        cpu0 = cpu_seconds(pid) if pid else 0
        elapsed = produce_max(bootstrap, "bench-max", args.messages, args.size, args.acks)
        cpu1 = cpu_seconds(pid) if pid else 0
        result["produce_mb_s"] = args.messages * args.size / elapsed / 1e6
        result["produce_msg_s"] = args.messages / elapsed
        elapsed = consume_all(bootstrap, "bench-max", args.messages, 16)
        cpu2 = cpu_seconds(pid) if pid else 0
        result["consume_mb_s"] = args.messages * args.size / elapsed / 1e6
        result["consume_msg_s"] = args.messages / elapsed
        if pid:
            result["broker_cpu_s_per_gb_produce"] = (cpu1 - cpu0) / gigabytes
            result["broker_cpu_s_per_gb_fetch"] = (cpu2 - cpu1) / gigabytes
        queue = mp.get_context("spawn").Queue()
        total = int(args.rate * args.seconds)
        reader = mp.get_context("spawn").Process(
            target=latency_reader, args=(bootstrap, "bench-latency", total, 16, queue))
        create_topic(bootstrap, "bench-latency", 16)
        reader.start()
        queue.get(timeout=60)
        time.sleep(1.0)  # the reader's first fetches have reached the log end
        produce_at_rate(bootstrap, "bench-latency", args.rate, args.seconds, args.size)
        latencies = queue.get(timeout=180)
        reader.join(30)
        if latencies:
            result["latency_ms"] = {"p50": percentile(latencies, 50), "p99": percentile(latencies, 99),
                                    "p99.9": percentile(latencies, 99.9), "count": len(latencies)}
        if pid:
            result["broker_peak_rss_mb"] = peak_rss_mb(pid)
        return result
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--bootstrap", help="use a running broker instead of starting kcore")
    parser.add_argument("--broker-pid", type=int, default=0, help="pid of --bootstrap's broker for CPU/RSS")
    args = parser.parse_args(argv)
    print(json.dumps(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

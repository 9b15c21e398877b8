"""Kafka's socket buffer default (102400) against the OS's autotuning (-1),
the figure behind kcore's default of -1 for ``socket.send.buffer.bytes``
and ``socket.receive.buffer.bytes``.

Two single-node brokers side by side (subprocesses, data in a temp dir),
one per setting. Each round, for each broker in turn: a confluent-kafka
producer writes ``--messages`` 1 KiB records to a fresh topic of 4
partitions (linger.ms 5, batch.size 1 MB, acks 1), then a consumer reads
them all back from offset 0; MB/s (10^6 bytes of values) of each, from
the first send to the last acknowledgement and from the first poll to the
last record. Rounds interleave the two brokers in alternating order (A B,
B A, ...), so a busy moment of the machine or a warm cache favours neither.

    .venv/bin/python -m bench.bench_socket_buffers
    .venv/bin/python -m bench.bench_socket_buffers --rounds 6 --messages 500000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing import BrokerProcess

PARTITIONS = 4
VALUE = os.urandom(512) * 2  # 1 KiB, half random
SETTINGS = {"kafka-102400": "102400", "os-autotuning": "-1"}


def produce(bootstrap: str, topic: str, messages: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "acks": 1, "queue.buffering.max.messages": 1_000_000})
    started = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("records left undelivered after 120 s")
    return messages * len(VALUE) / 1e6 / (time.perf_counter() - started)


def consume(bootstrap: str, topic: str, messages: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    read, started = 0, time.perf_counter()
    deadline = started + 120
    while read < messages and time.perf_counter() < deadline:
        read += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    if read < messages:
        raise RuntimeError(f"read {read} of {messages} records in 120 s")
    return messages * len(VALUE) / 1e6 / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--messages", type=int, default=300_000)
    args = parser.parse_args(argv)
    results: dict[str, dict[str, list[float]]] = {name: {"produce": [], "consume": []} for name in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="kcore-sockbuf-bench-") as tmp:
        brokers = {name: BrokerProcess(Path(tmp) / name, {"socket.send.buffer.bytes": value,
                                                          "socket.receive.buffer.bytes": value,
                                                          "http.listeners": ""}).start()
                   for name, value in SETTINGS.items()}
        try:
            for rnd in range(args.rounds):
                order = list(brokers.items())
                for name, broker in order if rnd % 2 == 0 else order[::-1]:  # A B, B A, ...
                    topic = f"round-{rnd}"
                    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held until answered
                    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
                    produced = produce(broker.bootstrap, topic, args.messages)
                    consumed = consume(broker.bootstrap, topic, args.messages)
                    results[name]["produce"].append(produced)
                    results[name]["consume"].append(consumed)
                    print(f"round {rnd} {name}: produce {produced:.0f} MB/s, consume {consumed:.0f} MB/s",
                          flush=True)
        finally:
            for broker in brokers.values():
                broker.kill()
    for name, figures in results.items():
        print(f"{name}: " + ", ".join(
            f"{kind} median {statistics.median(values):.0f} MB/s ({min(values):.0f}-{max(values):.0f})"
            for kind, values in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

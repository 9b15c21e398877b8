"""What a fetch over TLS costs without sendfile: one broker with a
PLAINTEXT and an SSL listener, one topic written once, then read back whole
by a confluent-kafka consumer over each listener in turn (interleaved
rounds, so other load on the machine hits both alike). Prints the
consumer's MB/s and the broker's CPU seconds per GB read for each.

    .venv/bin/python bench/tls_fetch_cost.py [--mb 200] [--rounds 4]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psutil
import trustme
from confluent_kafka import Consumer, Producer, TopicPartition

from kcore.testing import BrokerProcess, free_port

PARTITIONS = 16
VALUE = b"x" * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kcore-tls-fetch-"))
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(work / "server.pem"))
    plain, tls = free_port(), free_port()
    broker = BrokerProcess(work / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
        "ssl.keystore.location": str(work / "server.pem"), "http.listeners": "",
        "num.partitions": str(PARTITIONS)}, port=plain).start()
    configs = {"PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{plain}"},
               "SSL": {"bootstrap.servers": f"127.0.0.1:{tls}", "security.protocol": "SSL",
                       "ssl.ca.location": str(work / "ca.pem")}}
    try:
        count = args.mb * 1024
        producer = Producer({**configs["PLAINTEXT"], "linger.ms": 5, "batch.size": 1_000_000})
        for i in range(count):
            while True:
                try:
                    producer.produce("fetch-cost", VALUE, partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(120) == 0
        process = psutil.Process(broker.process.pid)
        results: dict[str, list[tuple[float, float]]] = {"PLAINTEXT": [], "SSL": []}
        for round_index in range(args.rounds):
            order = ("PLAINTEXT", "SSL") if round_index % 2 == 0 else ("SSL", "PLAINTEXT")
            for name in order:
                results[name].append(read_all(configs[name], count, process))
        for name, runs in results.items():
            mb_s = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"{name:10} consume {mb_s:7.1f} MB/s  broker {cpu:5.2f} CPU-s/GB  "
                  f"(runs: {', '.join(f'{r[0]:.0f}MB/s {r[1]:.2f}s/GB' for r in runs)})")
    finally:
        broker.kill()


def read_all(config: dict, count: int, process: psutil.Process) -> tuple[float, float]:
    consumer = Consumer({**config, "group.id": f"g-{time.monotonic_ns()}", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 1_048_576})
    consumer.assign([TopicPartition("fetch-cost", p, 0) for p in range(PARTITIONS)])
    got = size = 0
    cpu0, started = _cpu(process), time.monotonic()
    deadline = started + 300
    while got < count and time.monotonic() < deadline:
        for message in consumer.consume(10000, 0.5):
            if message.error() is None:
                got += 1
                size += len(message.value())
    elapsed, cpu = time.monotonic() - started, _cpu(process) - cpu0
    consumer.close()
    assert got == count, (got, count)
    return size / elapsed / 1e6, cpu / (size / 1e9)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


if __name__ == "__main__":
    main()

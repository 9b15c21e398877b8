"""Thousands of partitions on one broker: restart after SIGKILL and after a
clean stop, memory and descriptors per partition, Metadata latency.

For each partition count: a fresh kcore broker (Kafka's defaults: 1 GiB
segments, 10 MiB segment.index.bytes, no flush.ms) gets topics of 100
partitions each, then ``--unflushed-mb`` of 1 KiB random values spread
evenly over every partition by a confluent-kafka producer (acks=1), all
of it unflushed (the recovery points stay at 0). Then:

1. RSS and open descriptors of the broker, per partition (the RSS of the
   same broker before the topics were created is subtracted).
2. Metadata v8 for every topic, ``--metadata-rounds`` times on one raw
   connection: broker-side latency plus the transfer, no client decoding.
3. SIGKILL, then a start: seconds from exec to a listening port.
4. SIGTERM (a clean stop, timed too), then a start: the same.

One JSON line per partition count on stdout (and ``--out``).

    .venv/bin/python -m bench.bench_partitions --partitions 1000 5000 10000 20000
    .venv/bin/python -m bench.bench_partitions --partitions 10000 --unflushed-mb 100 \\
        --override num.recovery.threads.per.data.dir=2
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcore.bench import procs
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.frames import encode_request
from kcore.testing import free_port, kcore_command

PARTITIONS_PER_TOPIC = 100
START_TIMEOUT_S = 600.0
METADATA_VERSION = 8


class Broker:
    """A kcore broker process on a data dir that outlives it."""

    def __init__(self, root: Path, overrides: list[str]):
        self.root = root
        self.port = free_port()
        self.overrides = overrides
        self.process: subprocess.Popen | None = None

    def start(self) -> float:
        """Start and wait for the port; seconds from exec to listening."""
        command = [*kcore_command("broker"), "--log-level", "WARNING",
                   "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                   "--override", f"log.dirs={self.root / 'data'}"]
        for item in self.overrides:
            command += ["--override", item]
        started = time.monotonic()
        self.process = procs.spawn(command, self.root / "broker.log")
        procs.wait_for_port("127.0.0.1", self.port, self.process, START_TIMEOUT_S, None,
                            self.root / "broker.log")
        return time.monotonic() - started

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> float:
        """SIGTERM, and seconds until the process is gone."""
        started = time.monotonic()
        procs.stop(self.process, START_TIMEOUT_S)
        return time.monotonic() - started

    def footprint(self) -> tuple[int, int]:
        """(RSS bytes, open descriptors) of the broker process."""
        assert self.process is not None
        pid = self.process.pid
        with open(f"/proc/{pid}/status") as status:
            rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
        return rss_kb * 1024, len(os.listdir(f"/proc/{pid}/fd"))

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def create_topics(bootstrap: str, partitions: int) -> list[str]:
    from confluent_kafka.admin import AdminClient, NewTopic
    topics = [f"p{i:04d}" for i in range(partitions // PARTITIONS_PER_TOPIC)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, PARTITIONS_PER_TOPIC, 1) for t in topics],
                                  request_timeout=300)
    for future in futures.values():
        future.result(START_TIMEOUT_S)
    return topics


def produce_evenly(bootstrap: str, topics: list[str], megabytes: float) -> int:
    """1 KiB random values, round-robin over every partition; returns the
    number acknowledged."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 2_000_000, "acks": 1})
    value = os.urandom(1024)
    count = int(megabytes * 1024 * 1024 / len(value))
    acked = [0]

    def delivered(error, _message) -> None:
        acked[0] += error is None

    for i in range(count):
        topic = topics[i % len(topics)]
        partition = (i // len(topics)) % PARTITIONS_PER_TOPIC
        while True:
            try:
                producer.produce(topic, value, partition=partition, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(START_TIMEOUT_S)
    return acked[0]


def metadata_latencies(port: int, rounds: int) -> list[float]:
    """Seconds per Metadata (every topic) on one connection, responses read
    whole but not decoded."""
    latencies = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for correlation_id in range(rounds):
            frame = encode_request(ApiKey.METADATA, METADATA_VERSION, correlation_id, "bench",
                                   {"topics": None, "allow_auto_topic_creation": False,
                                    "include_cluster_authorized_operations": False,
                                    "include_topic_authorized_operations": False})
            started = time.perf_counter()
            sock.sendall(frame)
            size = struct.unpack(">i", _read_exactly(sock, 4))[0]
            _read_exactly(sock, size)
            latencies.append(time.perf_counter() - started)
    return latencies


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def run_one(partitions: int, args, workdir: Path) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"partitions-{partitions}-", dir=workdir))
    broker = Broker(root, args.override)
    record: dict = {"partitions": partitions, "unflushed_mb": args.unflushed_mb,
                    "overrides": args.override, "load_avg_start": os.getloadavg()[0]}
    try:
        record["fresh_start_s"] = broker.start()
        empty_rss, empty_fds = broker.footprint()
        started = time.monotonic()
        topics = create_topics(broker.bootstrap, partitions)
        record["create_s"] = time.monotonic() - started
        record["acked_messages"] = produce_evenly(broker.bootstrap, topics, args.unflushed_mb)
        rss, fds = broker.footprint()
        record.update(rss_mb=rss / 2**20, fds=fds,
                      rss_per_partition_kb=(rss - empty_rss) / partitions / 1024,
                      fds_per_partition=(fds - empty_fds) / partitions)
        latencies = sorted(metadata_latencies(broker.port, args.metadata_rounds))
        record.update(metadata_p50_ms=statistics.median(latencies) * 1000,
                      metadata_max_ms=latencies[-1] * 1000)
        broker.kill()
        record["load_avg_at_restarts"] = os.getloadavg()[0]
        record["restart_after_sigkill_s"] = broker.start()
        record["rss_after_restart_mb"], record["fds_after_restart"] = (
            v / 2**20 if i == 0 else v for i, v in enumerate(broker.footprint()))
        record["clean_stop_s"] = broker.stop()
        record["clean_restart_s"] = broker.start()
        broker.stop()
    finally:
        if broker.process is not None and broker.process.poll() is None:
            broker.kill()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[1000, 5000, 10000, 20000])
    parser.add_argument("--unflushed-mb", type=float, default=100.0,
                        help="MB produced (and left unflushed) before the SIGKILL, in total")
    parser.add_argument("--metadata-rounds", type=int, default=20)
    parser.add_argument("--override", action="append", default=[],
                        help="broker key=value, repeatable")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--keep", action="store_true", help="keep the data dirs")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    args = parser.parse_args(argv)
    for partitions in args.partitions:
        record = run_one(partitions, args, args.workdir)
        line = json.dumps(record, sort_keys=True)
        print(line, flush=True)
        if args.out is not None:
            with open(args.out, "a") as out:
                out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

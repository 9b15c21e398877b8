"""What the schema registry costs and serves.

``produce``: what validation on produce costs. One broker, two topics of
one partition each, one with ``confluent.value.schema.validation=true``
and one without; a confluent-kafka producer (linger.ms 5, batch.size 1 MB,
acks 1, ``--compression``) writes ``--messages`` records of ``--size``
bytes, each in Confluent's wire format with a registered id (the same
bytes to both topics, so validation is the only difference). MB/s from
the first send to the last acknowledgement; rounds alternate the order of
the two topics (A B, B A, ...) so a busy moment of the machine favours
neither. The target is validated >= 90% of plain. The producer is often
what limits MB/s on a small machine, so the broker's CPU seconds per GB
written (its process's user + system time over the run) are shown too:
they are where validation's cost shows.

``path``: the same comparison without the network and the client, in
this process: MB/s of ``Partition.append_records_to_leader`` (header and
record checks, append to a log in a temp dir) on two partitions, one with
validation on, for batches of ``--batch-kib`` KiB of ``--size``-byte
records, ``--compression`` none or lz4, appending to one and the other
in turn, batch by batch; with the CPU time this thread spent per batch,
which the machine's other load disturbs less than MB/s.

``lookups``: GET /schemas/ids/{id} per second, what serializers and
deserializers ask at start-up: ``--connections`` keep-alive HTTP/1.1
connections from one asyncio client process, each sending its next
request when the last is answered, over ``--schemas`` registered ids, for
``--seconds``.

    .venv/bin/python -m bench.bench_schema_registry produce --rounds 6
    .venv/bin/python -m bench.bench_schema_registry produce --size 100 --compression lz4
    .venv/bin/python -m bench.bench_schema_registry path --size 100 --batch-kib 1024
    .venv/bin/python -m bench.bench_schema_registry lookups --connections 8 --seconds 10
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import psutil
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing import TEST_SETTINGS, BrokerProcess, free_port
from tests.support.registry import call


def payload(schema_id: int, size: int) -> bytes:
    """A value in Confluent's wire format: magic byte, schema id, then
    half-random bytes of its own (compressible about 2:1, as the other
    benchmarks' values, and not like its neighbours)."""
    half = os.urandom(max(size - 5, 0) // 2)
    return (b"\x00" + struct.pack(">i", schema_id) + half * 2).ljust(size, b"\x00")


def start_broker(scratch: Path) -> tuple[BrokerProcess, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    broker = BrokerProcess(scratch / "data", {**TEST_SETTINGS, "schema.registry.listeners": url}).start()
    return broker, url


def register(url: str, subject: str, name: str) -> int:
    schema = json.dumps({"type": "record", "name": name, "fields": [{"name": "payload", "type": "bytes"}]})
    status, answer = call(url, "POST", f"/subjects/{subject}/versions", {"schema": schema})
    if status != 200:
        raise RuntimeError(f"register {subject}: {answer}")
    return answer["id"]


def produce(bootstrap: str, topic: str, value: bytes, messages: int, compression: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000, "acks": 1,
                         "compression.type": compression, "queue.buffering.max.messages": 1_000_000})
    failed = []
    started = time.perf_counter()
    for _ in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=0,
                                 on_delivery=lambda error, _m: failed.append(error) if error else None)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0 or failed:
        raise RuntimeError(f"undelivered or refused records: {failed[:3]}")
    return messages * len(value) / 1e6 / (time.perf_counter() - started)


def bench_produce(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kcore-bench-registry-") as scratch:
        broker, url = start_broker(Path(scratch))
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            topics = {"plain": {}, "validated": {"confluent.value.schema.validation": "true"}}
            futures = admin.create_topics([NewTopic(name, 1, 1, config=configs)
                                           for name, configs in topics.items()])
            for future in futures.values():
                future.result(30)
            schema_id = register(url, "validated-value", "Payload")
            value = payload(schema_id, args.size)
            rates: dict[str, list[float]] = {name: [] for name in topics}
            cpu: dict[str, list[float]] = {name: [] for name in topics}
            process = psutil.Process(broker.process.pid)
            gigabytes = args.messages * len(value) / 1e9
            for round_ in range(args.rounds):
                order = list(topics) if round_ % 2 == 0 else list(reversed(topics))
                for name in order:
                    before = sum(process.cpu_times()[:2])
                    rates[name].append(produce(broker.bootstrap, name, value, args.messages, args.compression))
                    cpu[name].append((sum(process.cpu_times()[:2]) - before) / gigabytes)
            print(f"{args.messages} records of {args.size} B, compression {args.compression}, {args.rounds} rounds")
            for name, found in rates.items():
                print(f"  {name:>9}: median {statistics.median(found):7.1f} MB/s  "
                      f"({', '.join(f'{rate:.1f}' for rate in found)}); broker CPU-s per GB: median "
                      f"{statistics.median(cpu[name]):.2f} ({', '.join(f'{c:.2f}' for c in cpu[name])})")
            plain, validated = statistics.median(rates["plain"]), statistics.median(rates["validated"])
            print(f"  validated / plain MB/s: {validated / plain:.2f} (target >= 0.90); broker CPU per GB "
                  f"validated / plain: {statistics.median(cpu['validated']) / statistics.median(cpu['plain']):.2f}")
        finally:
            broker.kill()


class AllowedIds:
    subject = "subject 'bench-value'"

    def __init__(self, ids: set[int]):
        self.ids = ids

    def allows(self, schema_id: int) -> bool:
        return schema_id in self.ids


def bench_path(args: argparse.Namespace) -> None:
    from kcore.config import BrokerConfig
    from kcore.log.config import LogConfig
    from kcore.log.log import Log
    from kcore.protocol.records import CompressionType, Record, build_batch
    from kcore.replication.partition import Partition

    count = max(1, args.batch_kib * 1024 // (args.size + 12))  # ~12 B of varints and attributes per record
    codec = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4}[args.compression]
    batch = bytes(build_batch([Record(value=payload(1, args.size), timestamp=int(time.time() * 1000))
                               for _ in range(count)], codec=codec))
    defaults = BrokerConfig().topic_defaults()
    # tmpfs when there is one: the page cache's writeback would otherwise
    # decide the figures (seen: 1.5 GB/s falling to 0.2 GB/s within a run).
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kcore-bench-path-", dir=memory) as scratch:
        partitions = {}
        # A second plain partition is the A/A control: what the two plain
        # figures differ by is the noise of the run.
        for name, validated in (("plain", False), ("plain-A/A", False), ("validated", True)):
            configs = {**defaults, "confluent.value.schema.validation": validated, "segment.bytes": 1 << 30,
                       "file.delete.delay.ms": 0}
            log = Log.open(Path(scratch) / f"{name}-0", LogConfig.from_topic_configs(configs))
            partition = Partition(name, 0, log, configs, broker_id=1)
            partition.schema_checks = lambda topic, configs: (None, AllowedIds({1}))
            partitions[name] = partition
        rates: dict[str, list[float]] = {name: [] for name in partitions}
        cpu_us: dict[str, list[float]] = {name: [] for name in partitions}
        appends = max(1, (args.round_mib << 20) // len(batch))
        for round_ in range(args.rounds):
            # Alternate batch by batch (A B A B ...): the machine's load
            # changes within a round, and each partition gets half of it.
            spent = dict.fromkeys(partitions, 0.0)
            used = dict.fromkeys(partitions, 0.0)
            order = list(partitions) if round_ % 2 == 0 else list(reversed(partitions))
            for _ in range(appends):
                for name in order:
                    buffer = memoryview(bytearray(batch))  # a fresh receive buffer, as a broker has
                    started, cpu = time.perf_counter(), time.thread_time()
                    partitions[name].append_records_to_leader(buffer, 1)
                    used[name] += time.thread_time() - cpu
                    spent[name] += time.perf_counter() - started
            for name, partition in partitions.items():
                rates[name].append(appends * len(batch) / 1e6 / spent[name])
                cpu_us[name].append(used[name] / appends * 1e6)
                partition.log.truncate_fully_and_start_at(partition.log_end_offset)
        print(f"batches of {len(batch)} B ({count} records of {args.size} B, {args.compression}), "
              f"{appends} per round, {args.rounds} rounds")
        for name, found in rates.items():
            print(f"  {name:>9}: median {statistics.median(found):8.1f} MB/s  "
                  f"({', '.join(f'{rate:.0f}' for rate in found)}); this thread's CPU per batch: median "
                  f"{statistics.median(cpu_us[name]):.1f} us")
        print(f"  validated / plain: {statistics.median(rates['validated']) / statistics.median(rates['plain']):.2f} "
              f"MB/s, {statistics.median(cpu_us['validated']) / statistics.median(cpu_us['plain']):.2f} CPU per batch")


async def _lookups(host: str, port: int, ids: list[int], connections: int, seconds: float) -> int:
    deadline = time.perf_counter() + seconds
    counts = [0] * connections

    async def client(index: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < deadline:
                schema_id = ids[(counts[index] + index) % len(ids)]
                writer.write(f"GET /schemas/ids/{schema_id} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(head.decode(errors="replace"))
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                await reader.readexactly(length)
                counts[index] += 1
        finally:
            writer.close()

    await asyncio.gather(*(client(index) for index in range(connections)))
    return sum(counts)


def bench_lookups(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kcore-bench-registry-") as scratch:
        broker, url = start_broker(Path(scratch))
        try:
            ids = [register(url, f"lookups-{index}-value", f"Schema{index}") for index in range(args.schemas)]
            port = int(url.rsplit(":", 1)[1])
            for round_ in range(args.rounds):
                answered = asyncio.run(_lookups("127.0.0.1", port, ids, args.connections, args.seconds))
                print(f"round {round_ + 1}: {answered / args.seconds:,.0f} GET /schemas/ids/{{id}} per second "
                      f"({args.connections} keep-alive connections, {args.schemas} ids)")
        finally:
            broker.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    produce_args = commands.add_parser("produce", help="produce MB/s with validation on and off")
    produce_args.add_argument("--rounds", type=int, default=6)
    produce_args.add_argument("--messages", type=int, default=200_000)
    produce_args.add_argument("--size", type=int, default=1024)
    produce_args.add_argument("--compression", default="none", choices=["none", "lz4", "zstd", "snappy", "gzip"])
    path = commands.add_parser("path", help="the partition's produce path with validation on and off")
    path.add_argument("--rounds", type=int, default=8)
    path.add_argument("--size", type=int, default=1024)
    path.add_argument("--batch-kib", type=int, default=960)  # under max.message.bytes, as producers keep it
    path.add_argument("--round-mib", type=int, default=256)
    path.add_argument("--compression", default="none", choices=["none", "lz4"])
    lookups = commands.add_parser("lookups", help="GET /schemas/ids/{id} per second")
    lookups.add_argument("--rounds", type=int, default=3)
    lookups.add_argument("--connections", type=int, default=8)
    lookups.add_argument("--schemas", type=int, default=100)
    lookups.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    {"produce": bench_produce, "path": bench_path, "lookups": bench_lookups}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What writing a topic as an Iceberg table (docs/tables.md) costs and how
far the table trails the log.

``produce``: one broker, two topics of ``--partitions`` partitions, one
with ``kcore.table.mode=key_value`` (commit interval ``--commit-ms``) and
one without; a confluent-kafka producer (linger.ms 5, acks 1) writes
``--messages`` records of ``--size`` half-random bytes to one, then the
other, the order alternating by round so a busy moment of the machine
favours neither. Produce MB/s from the first send to the last
acknowledgement (target: with a table >= 90% of without), and the table's
write rate: records per second per partition from the first send until
the table holds them all (its catch-up included).

``lag``: a steady ``--rate`` records/s for ``--seconds`` into a topic with
a table; every 100 ms the broker's ``kcore_table_lag_offsets`` (summed
over partitions) is read from /metrics and turned into seconds at that
rate, from ``--warmup`` seconds on; its p50 / p99 / max against the
commit interval (target p99 <= 2x).

``backfill``: ``--messages`` records written to a topic without a table,
then ``kcore.table.mode=key_value`` turned on (IncrementalAlterConfigs):
the seconds until the table holds them all, and records per second.

    .venv/bin/python -m bench.bench_tables produce --rounds 4
    .venv/bin/python -m bench.bench_tables backfill --messages 1000000
    .venv/bin/python -m bench.bench_tables lag --rate 20000 --seconds 30 --commit-ms 1000
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing import TEST_SETTINGS, BrokerProcess, free_port
from tests.support.tables import catalog_of, table_offsets


def start_broker(scratch: Path) -> tuple[BrokerProcess, str]:
    url = f"http://127.0.0.1:{free_port()}"
    broker = BrokerProcess(scratch / "data", {**TEST_SETTINGS, "http.listeners": url,
                                              "schema.registry.listeners": ""}).start()
    return broker, url


def create(bootstrap: str, topics: dict[str, dict[str, str]], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=configs)
                                       for name, configs in topics.items()]).values():
        future.result(30)


def value_of(size: int) -> bytes:
    half = os.urandom(size // 2)
    return (half * 2).ljust(size, b"\0")


def produce(bootstrap: str, topic: str, value: bytes, messages: int, partitions: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000, "acks": 1,
                         "queue.buffering.max.messages": 1_000_000})
    failed: list = []
    started = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions,
                                 on_delivery=lambda error, _m: failed.append(error) if error else None)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0 or failed:
        raise RuntimeError(f"undelivered records: {failed[:3]}")
    return time.perf_counter() - started


def wait_for_table(data_dir: Path, topic: str, ends: dict[int, int], timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (data_dir / "__tables" / "catalog.db").exists():
            offsets = table_offsets(catalog_of(data_dir), topic)
            if all(offsets.get(p, 0) >= end for p, end in ends.items()):
                return
        time.sleep(0.1)
    raise RuntimeError(f"the table of {topic} did not catch up in {timeout_s:g}s")


def bench_produce(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kcore-bench-tables-") as scratch:
        broker, _ = start_broker(Path(scratch))
        try:
            value = value_of(args.size)
            rates: dict[str, list[float]] = {"plain": [], "table": []}
            table_rates: list[float] = []
            for round_ in range(args.rounds):
                names = {"plain": f"plain-{round_}", "table": f"table-{round_}"}
                create(broker.bootstrap, {names["plain"]: {}, names["table"]: {
                    "kcore.table.mode": "key_value", "kcore.table.commit.interval.ms": str(args.commit_ms)}},
                    args.partitions)
                order = ["plain", "table"] if round_ % 2 == 0 else ["table", "plain"]
                for kind in order:
                    started = time.perf_counter()
                    seconds = produce(broker.bootstrap, names[kind], value, args.messages, args.partitions)
                    rates[kind].append(args.messages * args.size / 1e6 / seconds)
                    if kind == "table":
                        per_partition = args.messages // args.partitions
                        wait_for_table(broker.data_dir, names[kind], dict.fromkeys(range(args.partitions),
                                                                                   per_partition))
                        table_rates.append(per_partition / (time.perf_counter() - started))
            print(f"{args.messages} records of {args.size} B over {args.partitions} partitions, "
                  f"commit every {args.commit_ms} ms, {args.rounds} rounds")
            for kind, found in rates.items():
                print(f"  produce {kind:>5}: median {statistics.median(found):7.1f} MB/s "
                      f"({', '.join(f'{rate:.1f}' for rate in found)})")
            ratio = statistics.median(rates["table"]) / statistics.median(rates["plain"])
            print(f"  table / plain produce MB/s: {ratio:.2f} (target >= 0.90)")
            print(f"  table written: median {statistics.median(table_rates):,.0f} records/s per partition "
                  f"({', '.join(f'{rate:,.0f}' for rate in table_rates)}), from the first send to the table "
                  f"holding every record")
        finally:
            broker.kill()


def bench_backfill(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    with tempfile.TemporaryDirectory(prefix="kcore-bench-tables-") as scratch:
        broker, _ = start_broker(Path(scratch))
        try:
            topic = "backlog"
            create(broker.bootstrap, {topic: {}}, args.partitions)
            produce(broker.bootstrap, topic, value_of(args.size), args.messages, args.partitions)
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            resource = ConfigResource("topic", topic, incremental_configs=[
                ConfigEntry("kcore.table.mode", "key_value", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("kcore.table.commit.interval.ms", str(args.commit_ms),
                            incremental_operation=AlterConfigOpType.SET)])
            started = time.perf_counter()
            admin.incremental_alter_configs([resource])[resource].result(30)
            wait_for_table(broker.data_dir, topic, dict.fromkeys(range(args.partitions),
                                                                 args.messages // args.partitions), 1800.0)
            seconds = time.perf_counter() - started
            print(f"backfill of {args.messages:,} records of {args.size} B over {args.partitions} partitions: "
                  f"{seconds:.1f} s, {args.messages / seconds:,.0f} records/s "
                  f"({args.messages * args.size / 1e6 / seconds:.1f} MB/s)")
        finally:
            broker.kill()


def lag_offsets(url: str, topic: str) -> float | None:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("kcore_table_lag_offsets{") and f'topic="{topic}"' in line]
    return sum(values) if values else None


def bench_lag(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kcore-bench-tables-") as scratch:
        broker, url = start_broker(Path(scratch))
        try:
            topic = "lagging"
            create(broker.bootstrap, {topic: {"kcore.table.mode": "key_value",
                                              "kcore.table.commit.interval.ms": str(args.commit_ms)}},
                   args.partitions)
            samples: list[float] = []
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    found = lag_offsets(url, topic)
                    if found is not None:
                        samples.append(found / args.rate)
                    time.sleep(0.1)

            sampler = threading.Thread(target=sample, daemon=True)
            producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": 1})
            value = value_of(args.size)
            started = time.perf_counter()
            sent = 0
            warmed = False
            while time.perf_counter() - started < args.seconds:
                due = int((time.perf_counter() - started) * args.rate)
                while sent < due:
                    try:
                        producer.produce(topic, value, partition=sent % args.partitions)
                        sent += 1
                    except BufferError:
                        producer.poll(0.005)
                producer.poll(0.001)
                if not warmed and time.perf_counter() - started > args.warmup:
                    sampler.start()  # after the writer started and created the table
                    warmed = True
            producer.flush(60)
            stop.set()
            sampler.join(5)
            achieved = sent / (time.perf_counter() - started)
            ordered = sorted(samples)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            print(f"{args.rate} records/s asked ({achieved:,.0f} sent) of {args.size} B over {args.partitions} "
                  f"partitions for {args.seconds} s, commit every {args.commit_ms} ms, {len(samples)} samples")
            print(f"  table lag: p50 {statistics.median(ordered):.2f} s, p99 {p99:.2f} s, max {ordered[-1]:.2f} s; "
                  f"p99 / commit interval {p99 * 1000 / args.commit_ms:.2f} (target <= 2)")
        finally:
            broker.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    produce_parser = commands.add_parser("produce")
    produce_parser.add_argument("--messages", type=int, default=200_000)
    produce_parser.add_argument("--rounds", type=int, default=4)
    lag_parser = commands.add_parser("lag")
    lag_parser.add_argument("--rate", type=int, default=20_000)
    lag_parser.add_argument("--seconds", type=float, default=30.0)
    # The writer's first start imports pyiceberg, creates the table and
    # drains what came meanwhile: the steady state is sampled after it.
    lag_parser.add_argument("--warmup", type=float, default=10.0)
    backfill_parser = commands.add_parser("backfill")
    backfill_parser.add_argument("--messages", type=int, default=1_000_000)
    for sub in (produce_parser, lag_parser, backfill_parser):
        sub.add_argument("--size", type=int, default=1024)
        sub.add_argument("--partitions", type=int, default=4)
        sub.add_argument("--commit-ms", type=int, default=1000)
    args = parser.parse_args()
    {"produce": bench_produce, "lag": bench_lag, "backfill": bench_backfill}[args.command](args)


if __name__ == "__main__":
    main()

"""Records per second acknowledged by 4 share consumers on 1 partition
against 1 classic consumer on the same partition (KIP-932's figure).

One broker subprocess, one topic of one partition holding ``--records``
records of 100 bytes (produced once). Each round, interleaved:

- classic: one confluent-kafka Consumer (classic protocol, a new group,
  earliest) reads every record and commits the last offset;
- share: four confluent-kafka ShareConsumers (a new share group,
  share.auto.offset.reset=earliest, implicit acknowledgement) in four
  processes read every record, each acknowledging what it read
  (commit_sync at the end).

- wire: one share member speaking the protocol itself (kcore.testing's
  WireClient): each ShareFetch acknowledges (ACCEPT) the previous one's
  records and acquires up to 500 more; the broker's own cost, without a
  client library's loop.

A round's rate is records / seconds from the first record read to the
last record acknowledged (group joins excluded, the same for both); the
report gives the medians and the ratio share / classic of each round.
Every consumer process stops by itself after ``--limit`` seconds.

    .venv/bin/python -m bench.bench_share_groups [--rounds 3] [--records 50000]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kcore.protocol.api_keys import ApiKey
from kcore.testing import TEST_SETTINGS, BrokerProcess
from kcore.testing.wire import WireClient, topic_id_of

TOPIC = "share-bench"
VALUE = b"x" * 100
SHARE_CONSUMERS = 4


def _classic(bootstrap: str, group: str, total: int, limit_s: float, out) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    count, first, deadline = 0, None, time.monotonic() + limit_s
    while count < total and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.5):
            if message.error() is None:
                first = first or time.monotonic()
                count += 1
    consumer.commit(asynchronous=False)
    out.put((count, first, time.monotonic()))
    consumer.close()


def _share(bootstrap: str, group: str, total: int, limit_s: float, done, out) -> None:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([TOPIC])
    count, first, deadline = 0, None, time.monotonic() + limit_s
    while done.value < total and time.monotonic() < deadline:
        messages = consumer.poll(0.2)
        got = sum(1 for message in messages if message.error() is None)
        if got:
            first = first or time.monotonic()
            count += got
            with done.get_lock():
                done.value += got
    consumer.commit_sync()
    out.put((count, first, time.monotonic()))
    consumer.close()


def _rate(results: list[tuple[int, float | None, float]]) -> tuple[int, float]:
    count = sum(item[0] for item in results)
    firsts = [item[1] for item in results if item[1] is not None]
    elapsed = max(item[2] for item in results) - min(firsts) if firsts else float("inf")
    return count, count / elapsed


def run_classic(bootstrap: str, total: int, limit_s: float) -> float:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    process = context.Process(target=_classic, args=(bootstrap, f"c-{uuid.uuid4().hex[:6]}", total,
                                                     limit_s, out))
    process.start()
    result = out.get(timeout=limit_s + 60)
    process.join(60)
    count, rate = _rate([result])
    assert count >= total, f"the classic consumer read {count} of {total}"
    return rate


def run_share(bootstrap: str, total: int, limit_s: float) -> float:
    group = f"s-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    context = multiprocessing.get_context("spawn")
    out, done = context.Queue(), context.Value("q", 0)
    processes = [context.Process(target=_share, args=(bootstrap, group, total, limit_s, done, out))
                 for _ in range(SHARE_CONSUMERS)]
    for process in processes:
        process.start()
    results = [out.get(timeout=limit_s + 60) for _ in processes]
    for process in processes:
        process.join(60)
    count, rate = _rate(results)
    assert count >= total, f"the share consumers read {count} of {total}"
    return rate


def run_wire(port: int, total: int) -> float:
    """One member over the raw protocol (batch-optimized acquisition)."""
    client = WireClient(port)
    group = f"w-{uuid.uuid4().hex[:6]}"
    try:
        client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [{
            "resource_type": 32, "resource_name": group, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
            "validate_only": False})
        topic_id = topic_id_of(client, TOPIC)
        count, epoch, acks, started = 0, 0, [], time.monotonic()
        while count < total and time.monotonic() - started < 120:
            response = client.request(ApiKey.SHARE_FETCH, 1, {
                "group_id": group, "member_id": "bench", "share_session_epoch": epoch, "max_wait_ms": 500,
                "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500,
                "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0,
                                                                  "acknowledgement_batches": acks}]}],
                "forgotten_topics_data": []})
            epoch += 1
            ranges = [r for t in response.responses for p in t.partitions for r in p.acquired_records]
            count += sum(r.last_offset - r.first_offset + 1 for r in ranges)
            acks = [{"first_offset": r.first_offset, "last_offset": r.last_offset, "acknowledge_types": [1]}
                    for r in ranges]
        return count / (time.monotonic() - started)
    finally:
        client.close()


def _produce(producer: Producer) -> None:
    """One record; a full local queue (librdkafka holds 100,000 messages)
    waits for deliveries, up to 60 s, instead of failing the run."""
    deadline = time.monotonic() + 60
    while True:
        try:
            producer.produce(TOPIC, VALUE, partition=0)
            producer.poll(0)
            return
        except BufferError:
            if time.monotonic() > deadline:
                raise
            producer.poll(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--limit", type=float, default=120.0, help="seconds a consumer may run")
    parser.add_argument("--batch-bytes", type=int, default=1 << 20,
                        help="the producer's batch.size: a share fetch hands out whole batches")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcore-share-bench-") as scratch:
        broker = BrokerProcess(Path(scratch) / "data", dict(TEST_SETTINGS)).start()
        try:
            bootstrap = broker.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": args.batch_bytes})
            for _ in range(args.records):
                _produce(producer)
            producer.flush(60)
            classic, share, wire = [], [], []
            for _ in range(args.rounds):
                classic.append(run_classic(bootstrap, args.records, args.limit))
                share.append(run_share(bootstrap, args.records, args.limit))
                wire.append(run_wire(broker.port, args.records))
            ratios = [s / c for s, c in zip(share, classic)]
            print(json.dumps({"records": args.records, "rounds": args.rounds, "batch_bytes": args.batch_bytes,
                              "classic_records_per_s": [round(r) for r in classic],
                              "share4_records_per_s": [round(r) for r in share],
                              "median_classic": round(statistics.median(classic)),
                              "median_share4": round(statistics.median(share)),
                              "ratios_share4_over_classic": [round(r, 2) for r in ratios],
                              "wire_one_member_records_per_s": [round(r) for r in wire]}))
        finally:
            broker.kill()


if __name__ == "__main__":
    main()

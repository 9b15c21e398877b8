"""Transactional produce against idempotent produce: what transactions cost.

One single-node kcore broker (a subprocess, data in a temp dir, default
durability: acknowledged = in the page cache). Each run writes a fresh
topic of 8 partitions with 1 KiB half-random values from one
confluent-kafka producer process (linger.ms 5, batch.size 1 MB, acks=all,
idempotent), sending as fast as it can for ``--seconds`` or until
``--messages``, whichever comes first. Modes, interleaved per round
(A B C A B C ...):

  idempotent   enable.idempotence=true, one flush at the end
  txn-100ms    transactional.id set; commit every 100 ms of sending
  txn-1000ms   the same, commit every 1,000 ms

A commit is ``flush()`` (the messages sent since the last commit reach
the broker) then ``commit_transaction()`` (EndTxn: PrepareCommit on
``__transaction_state``; the markers follow on the broker), then
``begin_transaction()``; the interval counts from the end of the previous
commit, as Kafka Streams' commit.interval.ms does. A plain
``commit_transaction()`` would flush itself: ``flush_commit`` is what it
takes, ``commit`` the EndTxn part alone.

Per run: msg/s and MB/s (10^6 bytes of values) from the first send to the
last acknowledgement, ack latency p50/p99 (librdkafka's, produce() to
delivery report), commit and flush+commit latency p50/p99, how many
AddPartitionsToTxn requests were answered CONCURRENT_TRANSACTIONS (the
previous transaction's markers or CompleteCommit still in flight; librdkafka
retries them after 20 ms; counted from its ``debug=eos`` log), broker and
producer CPU seconds. Then the run is checked: a read_committed consumer
reads exactly the messages acknowledged and committed, and the last stable
offset equals the log end on every partition (nothing left open).

The summary gives per mode the median and the min-max over rounds, and the
figure that matters: transactional msg/s / idempotent msg/s, per round
(the two ran back to back) and its median; target >= 90% at 100 ms commits.

``--verification both`` prices transaction verification (KIP-890,
``transaction.partition.verification.enable``): a second broker runs with
it off, and each transactional mode runs on both, back to back in each
round (``txn-100ms`` then ``txn-100ms/unverified``); the summary adds
verified msg/s / unverified msg/s per round and its median. On one node
the coordinator is local, so what is measured is the leader's check and
the coordinator's answer, paid by the first batch of each partition in
each transaction (later batches find the transaction open).
``--latency N`` prices it per request instead, free of the producer's
batching: over N transactions of 8 partitions, interleaved between the two
brokers, the raw wire client times the first transactional produce to each
partition (verified) against the next one (the transaction already open
there), and gives the p50 difference per produce with verification on and
off.

    .venv/bin/python -m bench.bench_transactions
    .venv/bin/python -m bench.bench_transactions --rounds 5 --seconds 10
    .venv/bin/python -m bench.bench_transactions --messages 300000 --seconds 0
    .venv/bin/python -m bench.bench_transactions --verification both --modes txn-100ms
    .venv/bin/python -m bench.bench_transactions --verification both --latency 300 --rounds 0
"""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.bench_durability import cpu_seconds
from kcore.testing import BrokerProcess

PARTITIONS = 8
VALUE_BYTES = 1024
MODES = {"idempotent": 0.0, "txn-100ms": 0.1, "txn-1000ms": 1.0}  # mode -> commit interval (s)
# The label of a run on the broker with transaction verification off.
UNVERIFIED = "/unverified"
TARGET_RATIO = 0.9
PRODUCER_SETTINGS = {"linger.ms": 5, "batch.size": 1_000_000, "acks": "all",
                     "enable.idempotence": True,
                     "queue.buffering.max.messages": 1_000_000,
                     "queue.buffering.max.kbytes": 1_048_576,
                     # Transaction-manager events only (a few per transaction); the
                     # same in every mode so that no mode pays for logging alone.
                     "debug": "eos"}


class EosLog(logging.Handler):
    """Counts librdkafka's AddPartitionsToTxn answers of CONCURRENT_TRANSACTIONS."""

    def __init__(self):
        super().__init__()
        self.concurrent = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "AddPartitionsToTxn response" in message and "concurrent operation" in message:
            self.concurrent += 1


def producer_main(bootstrap: str, topic: str, messages: int, seconds: float, interval: float,
                  start, results) -> None:
    """One load generator; reports a dict of what it saw (times in seconds)."""
    from confluent_kafka import Producer
    latencies: list[float] = []
    failures = [0]

    def delivered(error, message):
        if error is None:
            latencies.append(message.latency())
        else:
            failures[0] += 1

    eos = EosLog()
    logger = logging.getLogger("librdkafka")
    logger.addHandler(eos)
    logger.setLevel(logging.DEBUG)
    settings = {"bootstrap.servers": bootstrap, "on_delivery": delivered, "logger": logger,
                **PRODUCER_SETTINGS}
    if interval:
        settings["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    producer = Producer(settings)
    payloads = [os.urandom(VALUE_BYTES // 2) + bytes((i + j) % 251 for j in range(VALUE_BYTES // 2))
                for i in range(64)]
    produce, poll, clock = producer.produce, producer.poll, time.perf_counter
    producer.list_topics(topic, timeout=30)
    if interval:
        producer.init_transactions(30)
    flushes: list[float] = []
    commits: list[float] = []

    def commit() -> None:
        flushed = clock()
        producer.flush(300)
        committing = clock()
        producer.commit_transaction(60)
        done = clock()
        flushes.append(committing - flushed)
        commits.append(done - committing)

    start.wait()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    began = clock()
    stop_at = began + seconds if seconds else float("inf")
    if interval:
        producer.begin_transaction()
    commit_at = began + interval
    sent = 0
    while sent < messages:
        value, partition = payloads[sent & 63], sent % PARTITIONS
        try:
            produce(topic, value, partition=partition)
        except BufferError:
            poll(0.001)
            continue
        sent += 1
        if sent & 63 == 0:
            poll(0)
            now = clock()
            if now >= stop_at:
                break
            if interval and now >= commit_at:
                commit()
                producer.begin_transaction()
                commit_at = clock() + interval
    if interval:
        commit()
    producer.flush(300)
    ended = clock()
    usage = resource.getrusage(resource.RUSAGE_SELF)  # librdkafka's threads included
    poll(0)  # serves the last log lines
    results.put({"began": began, "ended": ended, "sent": sent, "latencies": latencies,
                 "failures": failures[0], "flushes": flushes, "commits": commits,
                 "concurrent": eos.concurrent,
                 "cpu": usage.ru_utime + usage.ru_stime - cpu_before})


# -- checks ----------------------------------------------------------------------------------
def create_topic(admin, topic: str) -> None:
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def delete_topic(admin, topic: str) -> None:
    admin.delete_topics([topic])[topic].result(30)


def log_ends(admin, topic: str, read_committed: bool) -> list[int]:
    """Per partition: the last stable offset (read_committed) or the log end."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    answers = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest()
                                  for p in range(PARTITIONS)}, isolation_level=isolation)
    return [answers[TopicPartition(topic, p)].result(30).offset for p in range(PARTITIONS)]


def count_committed(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> int:
    """What a read_committed consumer reads of ``topic``: every partition to
    its end, and on until ``expected`` (the last markers may still be on
    their way) or ``timeout_s``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    count, at_end = 0, set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and (count < expected or len(at_end) < PARTITIONS):
            for message in consumer.consume(10_000, 0.5):
                error = message.error()
                if error is None:
                    count += 1
                    at_end.discard(message.partition())
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise RuntimeError(f"read_committed consumer: {error}")
    finally:
        consumer.close()
    return count


def check(admin, bootstrap: str, topic: str, acknowledged: int, transactional: bool) -> dict:
    log_end = sum(log_ends(admin, topic, False))
    if not transactional:
        return {"log_end": log_end, "ok": log_end == acknowledged}
    committed = count_committed(bootstrap, topic, acknowledged)
    stable = log_ends(admin, topic, True)
    return {"read_committed": committed, "lso_eq_log_end": stable == log_ends(admin, topic, False),
            "ok": committed == acknowledged and stable == log_ends(admin, topic, False)}


# -- one run ---------------------------------------------------------------------------------
def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


def run_once(broker: BrokerProcess, admin, mode: str, round_index: int, args) -> dict:
    """``mode``, with UNVERIFIED appended when ``broker`` verifies nothing."""
    interval = MODES[mode.removesuffix(UNVERIFIED)]
    topic = f"txn-bench-{round_index}-{mode.replace('/', '-')}"
    create_topic(admin, topic)
    context = mp.get_context("spawn")
    start, results = context.Event(), context.Queue()
    process = context.Process(target=producer_main, args=(
        broker.bootstrap, topic, args.messages, args.seconds, interval, start, results))
    process.start()
    time.sleep(1.0)  # connected, metadata and producer id in hand
    cpu_before = cpu_seconds(broker.process.pid)
    start.set()
    outcome = results.get(timeout=900)
    cpu = cpu_seconds(broker.process.pid) - cpu_before
    process.join(30)
    seconds = outcome["ended"] - outcome["began"]
    acknowledged = len(outcome["latencies"])
    ms = 1e3
    ends = [f + c for f, c in zip(outcome["flushes"], outcome["commits"], strict=True)]
    run = {"mode": mode, "round": round_index, "messages": acknowledged,
           "failures": outcome["failures"], "seconds": round(seconds, 3),
           "msg_per_s": round(acknowledged / seconds),
           "mb_per_s": round(acknowledged * VALUE_BYTES / seconds / 1e6, 1),
           "ack_p50_ms": round(percentile(outcome["latencies"], 0.5) * ms, 2),
           "ack_p99_ms": round(percentile(outcome["latencies"], 0.99) * ms, 2),
           "transactions": len(outcome["commits"]),
           "commit_p50_ms": round(percentile(outcome["commits"], 0.5) * ms, 2),
           "commit_p99_ms": round(percentile(outcome["commits"], 0.99) * ms, 2),
           "flush_commit_p50_ms": round(percentile(ends, 0.5) * ms, 2),
           "flush_commit_p99_ms": round(percentile(ends, 0.99) * ms, 2),
           "concurrent_retries": outcome["concurrent"],
           "broker_cpu_s": round(cpu, 2), "producer_cpu_s": round(outcome["cpu"], 2)}
    run["check"] = check(admin, broker.bootstrap, topic, acknowledged, interval > 0)
    delete_topic(admin, topic)
    return run


def summarize(runs: list[dict]) -> list[str]:
    def spread(values: list[float], fmt: str) -> str:
        return (f"{statistics.median(values):{fmt}} "
                f"({min(values):{fmt}}-{max(values):{fmt}})")

    lines = [f"{'mode':22} {'msg/s (min-max)':>24} {'MB/s':>18} {'commit p50/p99 ms':>18} "
             f"{'flush+commit p50/p99 ms':>24} {'retries':>7} {'CPU-s broker/producer':>22}"]
    labels = list(dict.fromkeys(r["mode"] for r in runs))
    by_mode = {mode: [r for r in runs if r["mode"] == mode] for mode in labels}
    for mode, mine in by_mode.items():
        interval = MODES[mode.removesuffix(UNVERIFIED)]
        m = {key: statistics.median(r[key] for r in mine) for key in (
            "commit_p50_ms", "commit_p99_ms", "flush_commit_p50_ms", "flush_commit_p99_ms",
            "concurrent_retries", "broker_cpu_s", "producer_cpu_s")}
        commits = (f"{m['commit_p50_ms']:.1f} / {m['commit_p99_ms']:.1f}" if interval else "-")
        ends = (f"{m['flush_commit_p50_ms']:.1f} / {m['flush_commit_p99_ms']:.1f}"
                if interval else "-")
        lines.append(f"{mode:22} {spread([r['msg_per_s'] for r in mine], '.0f'):>24} "
                     f"{spread([r['mb_per_s'] for r in mine], '.1f'):>18} {commits:>18} "
                     f"{ends:>24} {m['concurrent_retries']:7.0f} "
                     f"{m['broker_cpu_s']:10.2f} / {m['producer_cpu_s']:.2f}")
    for mode in ("txn-100ms", "txn-1000ms"):
        target = f" (target >= {TARGET_RATIO:.0%})" if mode == "txn-100ms" else ""
        lines += _ratio(by_mode, mode, "idempotent", target)
        lines += _ratio(by_mode, mode, mode + UNVERIFIED, " (what verification costs)")
    failed = [f"{r['mode']} round {r['round']}: {r['check']}" for r in runs if not r["check"]["ok"]]
    lines += [f"CHECK FAILED {line}" for line in failed] or [
        "checks: every run's acknowledged messages are in the log; read_committed reads "
        "exactly the committed ones, LSO = log end"]
    return lines


# -- verification per request (--latency) ----------------------------------------------------
def _first_and_next(client, transactional_id: str, producer: tuple[int, int],
                    sequences: list[int], topic: str) -> tuple[float, float]:
    """One transaction over PARTITIONS partitions: seconds of its first
    produce to each (verified) and of the next one (already open)."""
    from kcore.protocol import records as record_codec
    from kcore.protocol.api_keys import ApiKey
    from kcore.testing.wire import produce_body
    producer_id, epoch = producer
    topics = [{"name": topic, "partitions": list(range(PARTITIONS))}]
    while any(p.partition_error_code for t in client.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": producer_id,
            "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topics,
    }).results_by_topic_v3_and_below for p in t.results_by_partition):
        time.sleep(0.002)  # the previous transaction's markers are still going out
    times = []
    for _ in range(2):
        began = time.perf_counter()
        for partition in range(PARTITIONS):
            batch = record_codec.build_batch([record_codec.Record(value=bytes(100))], producer_id=producer_id,
                                             producer_epoch=epoch, base_sequence=sequences[partition],
                                             is_transactional=True)
            body = produce_body(topic, partition, bytes(batch), acks=-1)
            body["transactional_id"] = transactional_id
            code = client.request(ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0].error_code
            assert code == 0, f"produce answered {code}"
            sequences[partition] += 1
        times.append(time.perf_counter() - began)
    assert client.request(ApiKey.END_TXN, 3, {"transactional_id": transactional_id, "producer_id": producer_id,
                                              "producer_epoch": epoch, "committed": True}).error_code == 0
    return times[0], times[1]


def measure_latency(brokers: dict[str, tuple[BrokerProcess, object, bool]], transactions: int) -> list[str]:
    """--latency: the per-produce cost of verification (module docstring)."""
    from kcore.protocol.api_keys import ApiKey
    from kcore.testing.wire import WireClient
    clients, states, samples = {}, {}, {}
    for suffix, (broker, admin, _) in brokers.items():
        topic = f"txn-latency{suffix.replace('/', '-')}"
        create_topic(admin, topic)
        client = WireClient(broker.port, timeout=60)
        transactional_id = f"latency-{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + 30
        while True:  # the first FindCoordinator creates __transaction_state
            client.request(ApiKey.FIND_COORDINATOR, 2, {"key": transactional_id, "key_type": 1})
            started = client.request(ApiKey.INIT_PRODUCER_ID, 1, {
                "transactional_id": transactional_id, "transaction_timeout_ms": 60_000})
            if started.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert started.error_code == 0, f"InitProducerId answered {started.error_code}"
        clients[suffix] = client
        states[suffix] = (transactional_id, (started.producer_id, started.producer_epoch), [0] * PARTITIONS, topic)
        samples[suffix] = []
    try:
        for _ in range(transactions):
            for suffix, client in clients.items():
                samples[suffix].append(_first_and_next(client, *states[suffix]))
    finally:
        for client in clients.values():
            client.close()
    lines = []
    for suffix, pairs in samples.items():
        first = statistics.median(f for f, _ in pairs) / PARTITIONS * 1e6
        later = statistics.median(n for _, n in pairs) / PARTITIONS * 1e6
        extra = statistics.median(f - n for f, n in pairs) / PARTITIONS * 1e6
        label = f"verification {'on' if brokers[suffix][2] else 'off'}"
        lines.append(f"{label}: produce p50 {first:.0f} us first in a transaction, {later:.0f} us "
                     f"after; first - next p50 {extra:.0f} us per produce ({transactions} transactions "
                     f"of {PARTITIONS} partitions)")
    return lines


def _ratio(by_mode: dict[str, list[dict]], mode: str, base_mode: str, note: str) -> list[str]:
    """msg/s of ``mode`` over ``base_mode``, per round (they ran back to back)."""
    base = {r["round"]: r["msg_per_s"] for r in by_mode.get(base_mode, [])}
    ratios = [r["msg_per_s"] / base[r["round"]] for r in by_mode.get(mode, []) if r["round"] in base]
    if not ratios:
        return []
    return [f"{mode} / {base_mode}: median {statistics.median(ratios):.1%}, "
            f"per round {', '.join(f'{x:.1%}' for x in ratios)}{note}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="sending time per run (0: until --messages)")
    parser.add_argument("--messages", type=int, default=5_000_000, help="at most, per run")
    parser.add_argument("--modes", default=",".join(MODES), help="subset of " + ",".join(MODES))
    parser.add_argument("--verification", choices=("on", "off", "both"), default="on",
                        help="transaction.partition.verification.enable of the broker; both: "
                             "a second broker without it, each transactional mode on both")
    parser.add_argument("--latency", type=int, default=0, metavar="N",
                        help="also time N transactions' first and next produces per broker")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    from confluent_kafka.admin import AdminClient
    root = Path(tempfile.mkdtemp(prefix="kcore-transactions-"))
    brokers = {}
    for verified in {"on": [True], "off": [False], "both": [True, False]}[args.verification]:
        broker = BrokerProcess(root / f"data-{'verified' if verified else 'unverified'}", {
            "transaction.partition.verification.enable": str(verified).lower()}).start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log.connection.close": False})
        brokers[UNVERIFIED if args.verification == "both" and not verified else ""] = (broker, admin, verified)
        print(f"broker pid {broker.process.pid} on {broker.bootstrap}, transaction verification "
              f"{'on' if verified else 'off'}", flush=True)
    runs: list[dict] = []
    latency: list[str] = []
    try:
        if args.latency:
            latency = measure_latency(brokers, args.latency)
        for round_index in range(args.rounds):
            for mode in modes:
                for suffix, (broker, admin, _) in brokers.items():
                    if suffix and not MODES[mode] and "" in brokers:
                        continue  # idempotent produce verifies nothing: once is enough
                    run = run_once(broker, admin, mode + suffix, round_index, args)
                    runs.append(run)
                    print(json.dumps(run), flush=True)
    finally:
        for broker, _, _ in brokers.values():
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    if runs:
        print(f"workload: 1 broker, {PARTITIONS} partitions, {VALUE_BYTES} B values, 1 producer "
              f"(linger.ms {PRODUCER_SETTINGS['linger.ms']}, batch.size "
              f"{PRODUCER_SETTINGS['batch.size']}, acks=all, idempotent), "
              f"{args.seconds:g} s or {args.messages} messages per run, {args.rounds} rounds")
    for line in (summarize(runs) if runs else []) + latency:
        print(line)
    return 0 if all(r["check"]["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The fault suite's client processes (confluent-kafka), each writing its
own history file (history.py) on the run's shared monotonic time base:

    python -m tests.faults.harness.clients consumer BOOTSTRAP TOPIC GROUP NAME HISTORY BASE SECONDS
    python -m tests.faults.harness.clients processor BOOTSTRAP TOPIC GROUP NAME HISTORY BASE SECONDS SLOT

``consumer``: a member of a consumer group (read_committed, manual
commits): poll, record the reads, commit what it read, again.
``processor``: read-process-write in transactions: poll its share of the
topic, then in one transaction send two new values to each of one or two
partitions of the same topic, send its consumer offsets, and commit, or
(one in eight, on purpose) abort and rewind to the committed offsets. Its
transactional id is fixed per SLOT, so a restarted processor fences the
one before it.

Both stop after SECONDS or at SIGTERM (closing cleanly); the suite also
SIGKILLs them. Every loop is bounded by SECONDS.
"""
from __future__ import annotations

import json
import random
import signal
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

POLL_MESSAGES = 10_000   # far above what arrives in one poll: a poll is cut by time, never by count
POLL_TIMEOUT_S = 0.5
TXN_TIMEOUT_S = 20.0
# The processors' transaction.timeout.ms: a transaction a processor leaves
# open (killed, stopped) is aborted by its coordinator after this.
TRANSACTION_TIMEOUT_MS = 10_000
ABORT_ONE_IN = 8


class Recorder:
    """History ops on a time base shared by every process of a run."""

    def __init__(self, path: Path, base: float, process: str):
        self.handle = open(path, "a")  # noqa: SIM115 - open for the process's life
        self.base = base
        self.process = process
        self.lock = threading.Lock()

    def record(self, type_: str, f: str, value, **extra) -> dict:
        op = {"time": round(time.monotonic() - self.base, 6), "process": self.process, "type": type_,
              "f": f, "value": value, **extra}
        with self.lock:
            self.handle.write(json.dumps(op) + "\n")
            self.handle.flush()
        return op


def key(message_or_tp) -> str:
    return f"{message_or_tp.topic()}:{message_or_tp.partition()}" if callable(
        getattr(message_or_tp, "topic", None)) else f"{message_or_tp.topic}:{message_or_tp.partition}"


def reads_of(messages) -> dict[str, list]:
    reads: dict[str, list] = {}
    for message in messages:
        if message.error() is None:
            reads.setdefault(key(message), []).append([message.offset(), message.value().decode()])
    return reads


def consumer_config(bootstrap: str, group: str) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 30000,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000}


def run_consumer(bootstrap, topic, group, name, history, base, seconds) -> None:
    recorder = Recorder(Path(history), float(base), name)
    consumer = Consumer(consumer_config(bootstrap, group))
    assigned = lambda _c, partitions: recorder.record(  # noqa: E731
        "ok", "assign", sorted(key(tp) for tp in partitions), group=group)
    consumer.subscribe([topic], on_assign=assigned, on_revoke=assigned)
    deadline = time.monotonic() + float(seconds)
    try:
        while time.monotonic() < deadline and not STOP.is_set():
            recorder.record("invoke", "poll", [["poll"]], group=group)
            try:
                messages = consumer.consume(POLL_MESSAGES, POLL_TIMEOUT_S)
            except KafkaException as exc:
                recorder.record("fail", "poll", [["poll", {}]], group=group, error=str(exc))
                continue
            reads = reads_of(messages)
            recorder.record("ok", "poll", [["poll", reads]], group=group)
            if reads:
                commit(consumer, recorder, group, {k: v[-1][0] + 1 for k, v in reads.items()})
    finally:
        consumer.close()


def commit(consumer: Consumer, recorder: Recorder, group: str, offsets: dict[str, int]) -> None:
    partitions = [TopicPartition(k.rpartition(":")[0], int(k.rpartition(":")[2]), o) for k, o in offsets.items()]
    recorder.record("invoke", "commit", offsets, group=group)
    try:
        done = consumer.commit(offsets=partitions, asynchronous=False)
    except KafkaException as exc:
        recorder.record("fail", "commit", offsets, group=group, error=str(exc))
        return
    ok = {key(tp): tp.offset for tp in done if tp.error is None}
    recorder.record("ok" if len(ok) == len(offsets) else "fail", "commit", ok, group=group)


def run_processor(bootstrap, topic, group, name, history, base, seconds, slot) -> None:
    recorder = Recorder(Path(history), float(base), name)
    consumer = Consumer(consumer_config(bootstrap, group))
    assigned = lambda _c, partitions: recorder.record(  # noqa: E731
        "ok", "assign", sorted(key(tp) for tp in partitions), group=group)
    consumer.subscribe([topic], on_assign=assigned, on_revoke=assigned)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-{slot}",
                         "linger.ms": 5, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "message.timeout.ms": 9000,
                         "request.timeout.ms": 5000})
    producer.init_transactions(TXN_TIMEOUT_S * 2)
    partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    rng = random.Random(f"{name}")
    deadline = time.monotonic() + float(seconds)
    sequence = 0
    try:
        while time.monotonic() < deadline and not STOP.is_set():
            messages = [m for m in consumer.consume(POLL_MESSAGES, POLL_TIMEOUT_S) if m.error() is None]
            targets = rng.sample(range(partitions), rng.choice((1, 2)))
            values = []
            for partition in targets:
                for _ in range(2):
                    values.append((partition, f"{name}-{sequence}"))
                    sequence += 1
            transaction(consumer, producer, recorder, group, topic, messages, values,
                        abort=rng.randrange(ABORT_ONE_IN) == 0)
    finally:
        consumer.close()
        producer.flush(5)


def transaction(consumer, producer, recorder, group, topic, messages, values, abort: bool) -> None:
    reads = reads_of(messages)
    positions = {k: v[-1][0] + 1 for k, v in reads.items()}
    # The reads and offsets go into the invocation too: a processor killed
    # after its EndTxn reached the coordinator records no completion, yet
    # the transaction commits, and the checker must know what it read.
    invoked = ([["poll", reads]] if reads else []) + [["send", f"{topic}:{p}", v] for p, v in values]
    recorder.record("invoke", "txn", invoked, group=group, offsets=positions)
    sent: dict[str, list] = {}

    def delivered(err, message):
        if err is None:
            sent[message.value().decode()] = [message.offset(), message.value().decode()]

    try:
        producer.begin_transaction()
        for partition, value in values:
            producer.produce(topic, value.encode(), partition=partition, on_delivery=delivered)
        producer.flush(TXN_TIMEOUT_S)
        if positions:
            producer.send_offsets_to_transaction(
                [TopicPartition(k.rpartition(":")[0], int(k.rpartition(":")[2]), o) for k, o in positions.items()],
                consumer.consumer_group_metadata(), TXN_TIMEOUT_S)
        completed = ([["poll", reads]] if reads else []) + [
            ["send", f"{topic}:{p}", sent.get(v, v)] for p, v in values]
        if abort:
            producer.abort_transaction(TXN_TIMEOUT_S)
            recorder.record("fail", "txn", completed, group=group, offsets=positions, aborted=True)
            rewind(consumer, recorder, group)
            return
        producer.commit_transaction(TXN_TIMEOUT_S)
        recorder.record("ok", "txn", completed, group=group, offsets=positions)
    except KafkaException as exc:
        completed = ([["poll", reads]] if reads else []) + [
            ["send", f"{topic}:{p}", sent.get(v, v)] for p, v in values]
        error: KafkaError = exc.args[0]
        if error.txn_requires_abort():
            try:
                producer.abort_transaction(TXN_TIMEOUT_S)
                recorder.record("fail", "txn", completed, group=group, offsets=positions, error=str(error))
            except KafkaException:
                recorder.record("unknown", "txn", completed, group=group, offsets=positions, error=str(error))
            rewind(consumer, recorder, group)
            return
        # Neither committed nor aborted for certain: this incarnation stops,
        # and the next one's init_transactions settles it (fencing this one).
        recorder.record("unknown", "txn", completed, group=group, offsets=positions, error=str(error))
        raise SystemExit(3) from exc


def rewind(consumer: Consumer, recorder: Recorder, group: str) -> None:
    """After an abort: back to the group's committed offsets, as a new
    assignment would start (the history says so with an assign op)."""
    try:
        assignment = consumer.assignment()
        if not assignment:
            return
        for tp in consumer.committed(assignment, timeout=10):
            consumer.seek(tp if tp.offset >= 0 else TopicPartition(tp.topic, tp.partition, 0))
    except KafkaException as exc:
        # Left where it was, the next transaction would commit offsets past
        # the aborted reads: stop instead; the next incarnation starts from
        # the committed offsets.
        raise SystemExit(4) from exc
    recorder.record("ok", "assign", sorted(key(tp) for tp in assignment), group=group, reason="rewind")


STOP = threading.Event()


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    role, *args = argv
    if role == "consumer":
        run_consumer(*args)
    elif role == "processor":
        run_processor(*args)
    else:
        raise SystemExit(f"unknown role {role!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

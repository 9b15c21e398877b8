"""Transactions with real clients: a confluent-kafka transactional producer,
and a reader that consumes a topic to its end under either isolation level.

Under read_committed the end is the last stable offset, and offsets are not
contiguous (markers, aborted records), so `read_to_end` reads until the
client reports end-of-partition for every partition rather than counting
offsets. Every wait is bounded.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

REPO = Path(__file__).resolve().parents[2]
READ_TIMEOUT_S = 30.0
TXN_TIMEOUT_S = 30.0
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    value: bytes


def txn_producer(bootstrap: str, transactional_id: str | None = None, **config) -> Producer:
    """A confluent-kafka producer with ``transactional_id`` (a fresh one when
    None), its transactions initialised."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "transactional.id": transactional_id or f"txn-{uuid.uuid4().hex[:10]}",
                         **config})
    producer.init_transactions(TXN_TIMEOUT_S)
    return producer


def produce_in_transaction(producer: Producer, topic: str, values: list[bytes], partition: int = 0,
                           commit: bool = True) -> None:
    """One whole transaction: begin, produce (flushed, so the records are in
    the log before the end), commit or abort."""
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(TXN_TIMEOUT_S) == 0
    if commit:
        producer.commit_transaction(TXN_TIMEOUT_S)
    else:
        producer.abort_transaction(TXN_TIMEOUT_S)


def reader(bootstrap: str, isolation: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-reader-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "isolation.level": isolation,
                     "enable.partition.eof": True, "fetch.wait.max.ms": 50, **config})


def read_to_end(bootstrap: str, topic: str, partitions: int | list[int] = 1, isolation: str = READ_COMMITTED,
                timeout: float = READ_TIMEOUT_S) -> list[Read]:
    """Every record a fresh consumer with ``isolation`` returns from the
    start of each partition until its end (the LSO under read_committed)."""
    indexes = list(range(partitions)) if isinstance(partitions, int) else partitions
    consumer = reader(bootstrap, isolation)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in indexes])
        return read_until_eof(consumer, set(indexes), timeout)
    finally:
        consumer.close()


def read_until_eof(consumer: Consumer, partitions: set[int], timeout: float = READ_TIMEOUT_S) -> list[Read]:
    """What ``consumer`` returns until each of ``partitions`` reported its end."""
    found: list[Read] = []
    waiting = set(partitions)
    deadline = time.monotonic() + timeout
    while waiting:
        assert time.monotonic() < deadline, f"no end of partitions {sorted(waiting)} in {timeout:g}s"
        for message in consumer.consume(1000, 0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    waiting.discard(message.partition())
                    continue
                raise KafkaException(error)
            waiting.add(message.partition())  # more came after an end: read to the next
            found.append(Read(message.partition(), message.offset(), message.value()))
    return found


def values(reads: list[Read]) -> list[bytes]:
    return [r.value for r in reads]


def labelled(label: str, count: int) -> list[bytes]:
    return [f"{label}-{i}".encode() for i in range(count)]


class ProcessorProcess:
    """tests/support/txn_processor.py as a child process that a test can
    SIGKILL and start again (same arguments, same transactional id, the
    seed moved on by one per run); the output of every run goes to one
    file. ``start`` while one runs leaves that one as a zombie for the new
    one to fence."""

    def __init__(self, output: Path, bootstrap: str, source: str, sink: str, group: str,
                 transactional_id: str, seed: int, max_seconds: float):
        self.output = output
        self.args = [bootstrap, source, sink, group, transactional_id, str(seed), str(max_seconds)]
        self.process: subprocess.Popen | None = None
        self.started: list[subprocess.Popen] = []
        self.runs = 0

    def start(self) -> ProcessorProcess:
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.txn_processor", *self.args[:5],
                 str(int(self.args[5]) + self.runs), self.args[6]],
                stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
        self.started.append(self.process)
        self.runs += 1
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def kill_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()

    def dump_stacks(self) -> None:
        """The stacks of every run still alive, into the output (faulthandler on SIGUSR1)."""
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGUSR1)
        time.sleep(0.5)

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log(self) -> str:
        try:
            return self.output.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def committed(self) -> int:
        """The highest count of consumed-and-committed input any run reported."""
        counts = [int(line.split()[2]) for line in self.log().splitlines()
                  if len(line.split()) > 2 and line.split()[1] == "committed"]
        return max(counts, default=0)

    def aborts(self) -> int:
        return sum(1 for line in self.log().splitlines() if " aborted, rewound" in line)

"""The fault suite's workloads, all real confluent-kafka clients:

* `ProducerWorkload`: idempotent acks=all producers (threads here) writing
  unique values round-robin over a topic's partitions, at a bounded rate
  with a bounded number in flight;
* `ClientProcesses`: consumer-group members or read-process-write
  transaction processors (clients.py) as processes that a nemesis or the
  runner SIGKILLs and that are started again (a new incarnation, a new
  process name in the history);
* `audit`: after the faults, one read_committed read of every partition
  from its start to its end, the history's final "audit" poll.

`merge` puts the processes' history files and the runner's history into
one, ordered by time on their shared monotonic base.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kcore.testing.children import die_with_parent
from tests.faults.harness.clients import TRANSACTION_TIMEOUT_MS
from tests.faults.harness.history import History, Op, key

REPO = Path(__file__).resolve().parents[3]
# Errors after which librdkafka certainly did not write the message; any
# other delivery error (timeouts above all) leaves it unknown.
DEFINITE_FAILURES = {KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE, KafkaError._PURGE_QUEUE,
                     KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._INVALID_ARG}
MAX_IN_FLIGHT = 20


class ProducerWorkload:
    """``producers`` threads, each its own idempotent producer, writing
    about ``rate`` values a second. Bounded by ``seconds`` and stop().
    ``acks="1"`` (plain, not idempotent) is there to show what Kafka's
    weaker setting loses, never in the CI rounds."""

    def __init__(self, history: History, bootstrap: str, topic: str, partitions: int,
                 producers: int = 2, rate: float = 100.0, seconds: float = 600.0,
                 message_timeout_ms: int = 30_000, acks: str = "all"):
        self.history = history
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.seconds = seconds
        self.message_timeout_ms = message_timeout_ms
        self.acks = acks
        self.stopping = threading.Event()
        self.fatal_errors = 0
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True, name=f"producer-{i}")
                        for i in range(producers)]

    def start(self) -> ProducerWorkload:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(self.message_timeout_ms / 1000 + 30)

    def _producer(self) -> Producer:
        # Idempotence needs acks=all; acks=1 (to show what it loses) goes without.
        return Producer({"bootstrap.servers": self.bootstrap, "acks": self.acks,
                         "enable.idempotence": self.acks == "all",
                         "linger.ms": 2, "message.timeout.ms": self.message_timeout_ms,
                         "request.timeout.ms": 5000, "retry.backoff.ms": 100,
                         "topic.metadata.refresh.interval.ms": 1000})

    def _run(self, index: int) -> None:
        process = f"producer-{index}"
        producer = self._producer()
        in_flight = [0]
        fatal = threading.Event()
        deadline = time.monotonic() + self.seconds
        sequence = 0
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stopping.is_set() and time.monotonic() < deadline:
            if fatal.is_set():   # idempotence broken for good: a new producer, a new id
                self.fatal_errors += 1
                producer, fatal = self._producer(), threading.Event()
                in_flight[0] = 0
            if in_flight[0] >= MAX_IN_FLIGHT or time.monotonic() < next_at:
                self._poll(producer, fatal, 0.005)
                continue
            next_at += interval
            partition = sequence % self.partitions
            value = f"{process}-{sequence}"
            sequence += 1
            name = key(self.topic, partition)
            invocation = self.history.invoke(process, "send", [["send", name, value]], id=sequence)
            try:
                producer.produce(self.topic, value.encode(), partition=partition,
                                 on_delivery=self._delivered(invocation, name, value, in_flight, fatal))
                in_flight[0] += 1
            except BufferError:
                self.history.complete(invocation, "fail", error="queue full")
            self._poll(producer, fatal, 0)
        try:
            producer.flush(self.message_timeout_ms / 1000 + 5)
        except KafkaException:
            pass    # what is still in flight stays without completion: unknown

    @staticmethod
    def _poll(producer: Producer, fatal: threading.Event, timeout: float) -> None:
        """Serve delivery callbacks; a fatal error (librdkafka raises it from
        poll) retires this producer: its messages in flight stay unknown."""
        try:
            producer.poll(timeout)
        except KafkaException:
            fatal.set()

    def _delivered(self, invocation: Op, name: str, value: str, in_flight: list[int], fatal: threading.Event):
        def callback(err, message) -> None:
            in_flight[0] -= 1
            if err is None:
                self.history.complete(invocation, "ok", [["send", name, [message.offset(), value]]])
                return
            if err.fatal():
                fatal.set()
            type_ = "fail" if err.code() in DEFINITE_FAILURES else "unknown"
            self.history.complete(invocation, type_, error=err.str())
        return callback


class ClientProcesses:
    """``count`` client processes of one ``role`` (clients.py), each slot
    started again whenever its process ends before stop()."""

    def __init__(self, role: str, count: int, history: History, directory: Path, bootstrap: str,
                 topic: str, group: str, seconds: float):
        self.role = role
        self.history = history
        self.directory = Path(directory)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.seconds = seconds
        self.processes: list[subprocess.Popen | None] = [None] * count
        self.incarnations = [0] * count
        self.files: list[Path] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.watcher = threading.Thread(target=self._watch, daemon=True, name=f"{role}-watch")

    def start(self) -> ClientProcesses:
        for slot in range(len(self.processes)):
            self._spawn(slot)
        self.watcher.start()
        return self

    def _spawn(self, slot: int) -> None:
        self.incarnations[slot] += 1
        name = f"{self.role}-{slot}.{self.incarnations[slot]}"
        path = self.directory / f"{self.group}-{name}.jsonl"
        self.files.append(path)
        args = [sys.executable, "-m", "tests.faults.harness.clients", self.role, self.bootstrap, self.topic,
                self.group, name, str(path), repr(self.history.base), str(self.seconds)]
        if self.role == "processor":
            args.append(str(slot))
        log = open(self.directory / f"{self.group}-{name}.log", "wb")
        self.processes[slot] = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                                preexec_fn=_die_with_parent)
        log.close()

    def _watch(self) -> None:
        while not self.stopping.wait(0.2):
            with self.lock:
                for slot, process in enumerate(self.processes):
                    if process is not None and process.poll() is not None and not self.stopping.is_set():
                        self._spawn(slot)

    def kill(self, slot: int) -> str:
        """SIGKILL one member (the watcher starts its next incarnation)."""
        with self.lock:
            process = self.processes[slot]
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
            return f"{self.role}-{slot}.{self.incarnations[slot]}"

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.watcher.join(5)
        for process in self.processes:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            if process is None:
                continue
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the runner dies, however
    it dies."""
    die_with_parent(signal.SIGKILL)


def audit(history: History, bootstrap: str, topics: dict[str, int], timeout: float = 60.0) -> Op:
    """Read every partition of ``topics`` from the start to the end it has
    now (read_committed: its last stable offset), as one audit poll.

    It first waits (``settle_s``) until no transaction is open on any
    partition, the last stable offset caught up with the high watermark: a
    processor stopped or killed at the end of a round can leave one open,
    which the coordinator aborts after transaction.timeout.ms (10 s), and
    an audit read before that would miss the committed writes behind it.
    A transaction that never ends (docs/faults.md 3.4) still shows, as the
    writes behind it unseen at the end."""
    settle_s = 2 * TRANSACTION_TIMEOUT_MS / 1000
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    invocation = history.invoke("audit", "poll", [["poll"]])
    try:
        partitions = [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in topics.items() for p in range(n)]
        _wait_for_no_open_transaction(bootstrap, consumer, partitions, settle_s)
        ends = {key(tp.topic, tp.partition): consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in partitions}
        consumer.assign(partitions)
        reads: dict[str, list] = {name: [] for name in ends}
        waiting = {name for name, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            name = key(message.topic(), message.partition())
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF and message.offset() >= ends[name]:
                    waiting.discard(name)
                continue
            reads[name].append([message.offset(), message.value().decode()])
        if waiting:
            return history.complete(invocation, "fail", error=f"not read to the end: {sorted(waiting)}")
        return history.complete(invocation, "ok", [["poll", reads]], ends=ends)
    finally:
        consumer.close()


def _wait_for_no_open_transaction(bootstrap: str, committed: Consumer, partitions: list[TopicPartition],
                                  settle_s: float) -> None:
    """Until each partition's last stable offset (``committed``'s
    read_committed watermark) equals its high watermark, or ``settle_s``."""
    uncommitted = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-hw-{time.monotonic_ns()}",
                            "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    deadline = time.monotonic() + settle_s
    try:
        while time.monotonic() < deadline:
            try:
                if all(committed.get_watermark_offsets(tp, timeout=5)[1]
                       >= uncommitted.get_watermark_offsets(tp, timeout=5)[1] for tp in partitions):
                    return
            except KafkaException:
                pass  # a leader moving: ask again
            time.sleep(0.5)
    finally:
        uncommitted.close()


def merge(history: History, files: list[Path]) -> list[Op]:
    """The runner's ops and every client process's, by time, renumbered."""
    ops = [dict(op) for op in history.ops]
    for path in files:
        if path.exists():
            with open(path) as handle:
                for line in handle:
                    try:
                        ops.append(json.loads(line))
                    except json.JSONDecodeError:   # the last line of a SIGKILLed process
                        break
    ops.sort(key=lambda op: op["time"])
    for index, op in enumerate(ops):
        op["index"] = index
    return ops

"""Consumer-group scenarios with real clients: the shared harness.

Each consumer runs in its own spawned process (`start_worker`) with one of
confluent-kafka, kafka-python or aiokafka, subscribes to a topic in a
group, and appends to its own log file, flushed after every batch and
before that batch is committed:

    A <monotonic> <p,p,...>   partitions assigned
    R <monotonic> <p,p,...>   partitions revoked
    M <monotonic> <p> <o>     message (p, o) processed
    C <monotonic> <p> <o>     next offset o of p committed (commit succeeded)

CLOCK_MONOTONIC is one clock for every process on the machine, so the logs
of all workers merge into one history. `check_history` is the oracle:
every produced message processed, and a message processed twice only at an
offset at or past the partition's committed offset at that moment
(redelivery only after the last commit); tests/integration/test_groups_harness.py
checks the oracle itself.

The project's consumer-group tests run these scenarios, and `bench_groups`
times the member-killed one (seconds until the survivors take over).
"""
from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.process
import multiprocessing.synchronize
import os
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kcore.testing.wire import WireClient

PARTITIONS = 12
# Heartbeats every 300 ms and a 2 s session: a killed member is noticed in
# about 2 s and the survivors hear of the rebalance within 300 ms.
SESSION_TIMEOUT_MS = 2000
HEARTBEAT_INTERVAL_MS = 300
GROUP_BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": "200",
                         "group.min.session.timeout.ms": "1000",
                         "num.partitions": str(PARTITIONS)}
CLIENTS = ("confluent", "kafka-python", "aiokafka")
BATCH = 500
SPAWN = multiprocessing.get_context("spawn")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- worker side (runs in the spawned process) ----------------------------------------

@dataclass
class WorkerOptions:
    client: str
    bootstrap: str
    topic: str
    group: str
    log_path: str
    # Assignor names in order of preference, comma separated (librdkafka's syntax).
    assignor: str = "range"
    instance_id: str | None = None
    session_timeout_ms: int = SESSION_TIMEOUT_MS
    # Pause after each batch, so a test can kill a member mid-stream.
    pause_s: float = 0.0
    # Stop committing after this many commits (None: commit every batch), so
    # a killed member surely leaves processed but uncommitted messages.
    max_commits: int | None = None

    def should_commit(self, commits_done: int) -> bool:
        return self.max_commits is None or commits_done < self.max_commits


class WorkerLog:
    def __init__(self, path: str):
        self.file = open(path, "a", buffering=1 << 16)

    def event(self, kind: str, partitions) -> None:
        self.file.write(f"{kind} {time.monotonic():.6f} {','.join(str(p) for p in sorted(partitions))}\n")
        self.file.flush()

    def messages(self, items) -> None:
        now = f"{time.monotonic():.6f}"
        self.file.write("".join(f"M {now} {p} {o}\n" for p, o in items))
        self.file.flush()

    def committed(self, offsets: dict[int, int]) -> None:
        now = f"{time.monotonic():.6f}"
        self.file.write("".join(f"C {now} {p} {o}\n" for p, o in offsets.items()))
        self.file.flush()


def next_offsets(items) -> dict[int, int]:
    result: dict[int, int] = {}
    for partition, offset in items:
        result[partition] = max(result.get(partition, 0), offset + 1)
    return result


def run_worker(options: WorkerOptions, stop) -> None:
    log = WorkerLog(options.log_path)
    if options.client == "confluent":
        _run_confluent(options, stop, log)
    elif options.client == "kafka-python":
        _run_kafka_python(options, stop, log)
    else:
        asyncio.run(_run_aiokafka(options, stop, log))


def _run_confluent(options: WorkerOptions, stop, log: WorkerLog) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    config = {"bootstrap.servers": options.bootstrap, "group.id": options.group,
              "client.id": "confluent-worker", "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "session.timeout.ms": options.session_timeout_ms,
              "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
              "partition.assignment.strategy": options.assignor}
    if options.instance_id:
        config["group.instance.id"] = options.instance_id
    consumer = Consumer(config)
    consumer.subscribe([options.topic],
                       on_assign=lambda c, parts: log.event("A", [p.partition for p in parts]),
                       on_revoke=lambda c, parts: log.event("R", [p.partition for p in parts]))
    commits = 0
    while not stop.is_set():
        items = [(m.partition(), m.offset()) for m in consumer.consume(BATCH, 0.2) if not m.error()]
        if not items:
            continue
        log.messages(items)
        offsets = next_offsets(items)
        if options.should_commit(commits):
            try:
                consumer.commit(offsets=[TopicPartition(options.topic, p, o) for p, o in offsets.items()],
                                asynchronous=False)
                log.committed(offsets)
                commits += 1
            except KafkaException:
                pass
        time.sleep(options.pause_s)
    consumer.close()


def _run_kafka_python(options: WorkerOptions, stop, log: WorkerLog) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            log.event("R", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            log.event("A", [tp.partition for tp in assigned])

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = KafkaConsumer(bootstrap_servers=options.bootstrap, group_id=options.group,
                             client_id="kafka-python-worker", auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=options.session_timeout_ms,
                             heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, max_poll_records=BATCH,
                             partition_assignment_strategy=[assignors[name] for name
                                                            in options.assignor.split(",")],
                             group_instance_id=options.instance_id)
    consumer.subscribe([options.topic], listener=Listener())
    commits = 0
    while not stop.is_set():
        batches = consumer.poll(timeout_ms=200)
        items = [(tp.partition, r.offset) for tp, records in batches.items() for r in records]
        if not items:
            continue
        log.messages(items)
        offsets = next_offsets(items)
        if options.should_commit(commits):
            try:
                consumer.commit({TopicPartition(options.topic, p): OffsetAndMetadata(o, "", -1)
                                 for p, o in offsets.items()})
                log.committed(offsets)
                commits += 1
            except KafkaError:
                pass
        time.sleep(options.pause_s)
    consumer.close()


async def _run_aiokafka(options: WorkerOptions, stop, log: WorkerLog) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            log.event("R", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            log.event("A", [tp.partition for tp in assigned])

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = AIOKafkaConsumer(bootstrap_servers=options.bootstrap, group_id=options.group,
                                client_id="aiokafka-worker", auto_offset_reset="earliest",
                                enable_auto_commit=False, session_timeout_ms=options.session_timeout_ms,
                                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, max_poll_records=BATCH,
                                partition_assignment_strategy=tuple(
                                    assignors[name] for name in options.assignor.split(",")),
                                group_instance_id=options.instance_id)
    consumer.subscribe([options.topic], listener=Listener())
    await consumer.start()
    commits = 0
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            items = [(tp.partition, r.offset) for tp, records in batches.items() for r in records]
            if not items:
                continue
            log.messages(items)
            offsets = next_offsets(items)
            if options.should_commit(commits):
                try:
                    await consumer.commit({TopicPartition(options.topic, p): o for p, o in offsets.items()})
                    log.committed(offsets)
                    commits += 1
                except KafkaError:
                    pass
            await asyncio.sleep(options.pause_s)
    finally:
        await consumer.stop()


# -- test side ------------------------------------------------------------------------

@dataclass
class Worker:
    options: WorkerOptions
    process: multiprocessing.process.BaseProcess
    stop: multiprocessing.synchronize.Event

    def kill(self) -> None:
        self.process.kill()
        self.process.join(10)

    def close(self, timeout: float = 15) -> None:
        """Stop cleanly (the client leaves the group); a killed worker is left as is."""
        if not self.process.is_alive():
            return
        self.stop.set()
        self.process.join(timeout)
        if self.process.is_alive():
            self.kill()
            raise AssertionError(f"{self.options.client} worker did not stop within {timeout}s")


def start_worker(tmp_path: Path, name: str, **kwargs) -> Worker:
    options = WorkerOptions(log_path=str(tmp_path / f"{name}.log"), **kwargs)
    stop = SPAWN.Event()
    process = SPAWN.Process(target=run_worker, args=(options, stop), daemon=True)
    process.start()
    return Worker(options, process, stop)


@dataclass
class History:
    """Every worker's log, merged in time order."""
    events: list[tuple[float, str, str, int, int]] = field(default_factory=list)
    assignments: dict[str, list[tuple[float, frozenset[int]]]] = field(default_factory=dict)
    revocations: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def read(cls, workers: dict[str, Path]) -> History:
        history = cls()
        for name, path in workers.items():
            history.assignments[name] = []
            history.revocations[name] = []
            if not os.path.exists(path):
                continue
            for line in Path(path).read_text().splitlines():
                parts = line.split(" ")
                try:
                    if parts[0] == "A":
                        partitions = frozenset(int(p) for p in parts[2].split(",") if p)
                        history.assignments[name].append((float(parts[1]), partitions))
                    elif parts[0] == "R":
                        history.revocations[name].append(float(parts[1]))
                    elif parts[0] in ("M", "C") and len(parts) == 4:
                        history.events.append((float(parts[1]), parts[0], name, int(parts[2]),
                                               int(parts[3])))
                except (IndexError, ValueError):
                    continue  # the torn last line of a killed worker
        history.events.sort()
        return history

    def processed(self) -> set[tuple[int, int]]:
        return {(p, o) for _, kind, _, p, o in self.events if kind == "M"}

    def current_assignment(self, name: str) -> frozenset[int]:
        entries = self.assignments.get(name) or []
        if not entries:
            return frozenset()
        last_assign = entries[-1][0]
        if any(t > last_assign for t in self.revocations.get(name, [])):
            return frozenset()
        return entries[-1][1]


def check_history(history: History, expected: set[tuple[int, int]],
                  exactly_once: bool) -> list[tuple[int, int]]:
    """The oracle (see module doc); returns the redelivered messages."""
    seen: set[tuple[int, int]] = set()
    committed: dict[int, int] = defaultdict(int)
    redelivered = []
    for _, kind, name, partition, offset in history.events:
        if kind == "C":
            committed[partition] = max(committed[partition], offset)
            continue
        key = (partition, offset)
        if key in seen:
            assert not exactly_once, f"{key} processed twice (second time by {name})"
            assert offset >= committed[partition], (
                f"{key} redelivered to {name} below the committed offset {committed[partition]}")
            redelivered.append(key)
        seen.add(key)
    missing = expected - seen
    assert not missing, f"{len(missing)} messages never consumed, e.g. {sorted(missing)[:5]}"
    assert seen <= expected, f"unexpected messages {sorted(seen - expected)[:5]}"
    return redelivered


def wait_for(condition, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_for_balanced(logs: dict[str, Path], timeout: float = 30) -> dict[str, frozenset[int]]:
    """Wait until the named workers hold disjoint, non-empty assignments
    covering every partition; returns them."""
    def balanced():
        history = History.read(logs)
        current = {name: history.current_assignment(name) for name in logs}
        union = frozenset().union(*current.values())
        if all(current.values()) and union == frozenset(range(PARTITIONS)) \
                and sum(len(a) for a in current.values()) == PARTITIONS:
            return current
        return None
    return wait_for(balanced, timeout, f"a balanced assignment over {sorted(logs)}")


def create_topic(port: int, topic: str, partitions: int = PARTITIONS) -> None:
    client = WireClient(port)
    try:
        response = client.request(19, 4, {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
        assert response.topics[0].error_code == 0, response.topics[0].error_message
    finally:
        client.close()


def describe_group(port: int, group: str) -> tuple[str, str, int]:
    """(state, protocol, member count) from DescribeGroups."""
    client = WireClient(port)
    try:
        described = client.request(15, 4, {"groups": [group], "include_authorized_operations": False})
    finally:
        client.close()
    result = described.groups[0]
    return result.group_state, result.protocol_data, len(result.members)


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    """`count` messages spread evenly over the partitions (value = its number)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for index in range(start, start + count):
        while True:
            try:
                producer.produce(topic, str(index).encode(), partition=index % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def expected_messages(count_per_partition: dict[int, int]) -> set[tuple[int, int]]:
    return {(p, o) for p, n in count_per_partition.items() for o in range(n)}


def even_counts(total: int) -> dict[int, int]:
    return {p: total // PARTITIONS + (1 if p < total % PARTITIONS else 0) for p in range(PARTITIONS)}


# -- scenarios, one call per client ------------------------------------------------------

def count_processed(logs: dict[str, Path]) -> int:
    total = 0
    for path in logs.values():
        if os.path.exists(path):
            data = Path(path).read_bytes()
            total += data.count(b"\nM ") + data.startswith(b"M ")
    return total


def wait_until_processed(logs: dict[str, Path], count: int, timeout: float) -> None:
    wait_for(lambda: count_processed(logs) >= count, timeout, f"{count} processed messages",
             interval=0.2)


def scenario_exactly_once(broker, tmp_path: Path, clients: list[str], count: int,
                          assignors: list[str] | None = None,
                          expected_protocol: str = "range") -> History:
    """Members (one per entry of `clients`, with `assignors` preferences)
    share 12 partitions; messages are produced once the group is balanced
    on `expected_protocol`; each is processed exactly once."""
    topic, group = unique("eo"), unique("group")
    create_topic(broker.port, topic)
    names = [f"w{i}" for i in range(len(clients))]
    logs = {name: tmp_path / f"{name}.log" for name in names}
    assignors = assignors or ["range"] * len(clients)
    workers = [start_worker(tmp_path, name, client=client, bootstrap=broker.bootstrap, topic=topic,
                            group=group, assignor=assignor)
               for name, client, assignor in zip(names, clients, assignors)]
    try:
        assignment = wait_for_balanced(logs)
        assert describe_group(broker.port, group) == ("Stable", expected_protocol, len(clients))
        produce(broker.bootstrap, topic, count)
        # Generous: a 300k run takes ~10 s; a stall shows as a timeout, not a hang.
        wait_until_processed(logs, count, timeout=120)
    finally:
        for worker in workers:
            worker.close()
    history = History.read(logs)
    check_history(history, expected_messages(even_counts(count)), exactly_once=True)
    for name in names:
        mine = {p for _, kind, who, p, _ in history.events if kind == "M" and who == name}
        assert mine == set(assignment[name]), f"{name} read partitions it was not assigned"
    return history


def scenario_member_killed(broker, tmp_path: Path, client: str) -> float:
    """One of three members is SIGKILLed mid-stream; the survivors take over
    its partitions; every message is consumed, redelivered only from the
    last commit. Returns seconds from the kill to the survivors' new
    assignment covering all partitions."""
    topic, group = unique("kill"), unique("group")
    create_topic(broker.port, topic)
    names = ["victim", "s1", "s2"]
    logs = {name: tmp_path / f"{name}.log" for name in names}
    workers = {name: start_worker(tmp_path, name, client=client, bootstrap=broker.bootstrap,
                                  topic=topic, group=group, pause_s=0.1,
                                  max_commits=2 if name == "victim" else None) for name in names}
    try:
        wait_for_balanced(logs)
        produce(broker.bootstrap, topic, 12_000)
        # Batches hold at most 500 messages: 1500 processed means some past the 2 commits.
        wait_until_processed({"victim": logs["victim"]}, 1500, timeout=30)
        workers["victim"].kill()
        killed_at = time.monotonic()
        produce(broker.bootstrap, topic, 18_000, start=12_000)
        survivors = {name: logs[name] for name in ("s1", "s2")}
        wait_for_balanced(survivors, timeout=SESSION_TIMEOUT_MS / 1000 + 10)
        history = History.read(survivors)
        takeover = max(entries[-1][0] for entries in history.assignments.values()) - killed_at
        wait_for(lambda: len(History.read(logs).processed()) >= 30_000, 60, "every message",
                 interval=0.5)
    finally:
        for worker in workers.values():
            worker.close()
    history = History.read(logs)
    redelivered = check_history(history, expected_messages(even_counts(30_000)), exactly_once=False)
    victim_processed = {(p, o) for _, kind, who, p, o in history.events
                        if kind == "M" and who == "victim"}
    assert redelivered and set(redelivered) <= victim_processed
    victim_partitions = set(history.assignments["victim"][-1][1])
    late = [(p, o) for t, kind, who, p, o in history.events
            if kind == "M" and who != "victim" and t > killed_at]
    assert victim_partitions <= {p for p, _ in late}, "survivors did not take over the victim's partitions"
    return takeover


def scenario_static_member_restart(broker, tmp_path: Path, client: str) -> None:
    """A static member killed and restarted within its session timeout gets
    its partitions back and nobody rebalances."""
    topic, group = unique("static"), unique("group")
    create_topic(broker.port, topic)
    names = ["s0", "s1", "s2"]
    logs = {name: tmp_path / f"{name}.log" for name in names}
    common = dict(client=client, bootstrap=broker.bootstrap, topic=topic, group=group,
                  session_timeout_ms=10_000)
    workers = {name: start_worker(tmp_path, name, instance_id=f"instance-{name}", **common)
               for name in names}
    restarted = None
    try:
        before = wait_for_balanced(logs)
        produce(broker.bootstrap, topic, 3000)
        wait_for(lambda: _committed_all(logs, even_counts(3000)), 30, "3000 committed messages")
        assignments_before = {n: len(History.read(logs).assignments[n]) for n in ("s1", "s2")}
        workers["s0"].kill()
        restarted = start_worker(tmp_path, "s0-again", instance_id="instance-s0", **common)
        again = {"s0-again": tmp_path / "s0-again.log"}
        wait_for(lambda: History.read(again).current_assignment("s0-again"), 30,
                 "the restarted member's assignment")
        assert History.read(again).current_assignment("s0-again") == before["s0"]
        produce(broker.bootstrap, topic, 3000, start=3000)
        all_logs = {**logs, **again}
        wait_for(lambda: len(History.read(all_logs).processed()) >= 6000, 30, "6000 messages")
        history = History.read(all_logs)
        for name in ("s1", "s2"):
            assert len(history.assignments[name]) == assignments_before[name], f"{name} was reassigned"
            assert history.current_assignment(name) == before[name]
    finally:
        for worker in [*workers.values(), restarted]:
            if worker is not None:
                worker.close()
    check_history(History.read(all_logs), expected_messages(even_counts(6000)), exactly_once=True)


def _committed_all(logs: dict[str, Path], counts: dict[int, int]) -> bool:
    committed: dict[int, int] = defaultdict(int)
    for _, kind, _, partition, offset in History.read(logs).events:
        if kind == "C":
            committed[partition] = max(committed[partition], offset)
    return all(committed[p] >= n for p, n in counts.items())


def scenario_broker_restart(broker, tmp_path: Path, client: str) -> None:
    """A member commits and leaves; the broker restarts (clean, then SIGKILL);
    the next member of the group resumes exactly at the committed offsets."""
    topic, group = unique("restart"), unique("group")
    create_topic(broker.port, topic)
    logs: dict[str, Path] = {}
    total = 0
    for round_number, clean in enumerate((True, False)):
        produce(broker.bootstrap, topic, 6000, start=total)
        total += 6000
        first, second = f"r{round_number}-before", f"r{round_number}-after"
        logs[first], logs[second] = tmp_path / f"{first}.log", tmp_path / f"{second}.log"
        worker = start_worker(tmp_path, first, client=client, bootstrap=broker.bootstrap,
                              topic=topic, group=group, pause_s=0.2)
        try:
            wait_until_processed({first: logs[first]}, 1500, timeout=30)
        finally:
            worker.close()
        broker.restart(clean=clean)
        worker = start_worker(tmp_path, second, client=client, bootstrap=broker.bootstrap,
                              topic=topic, group=group)
        try:
            wait_for(lambda total=total: len(History.read(logs).processed()) >= total, 40,
                     f"{total} messages after restart")
        finally:
            worker.close()
        check_history(History.read(logs), expected_messages(even_counts(total)), exactly_once=True)

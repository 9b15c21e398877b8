"""A node of several broker processes (num.processes) under a supervisor:
partitions and group coordinators spread over the processes, a process
that dies is restarted without losing anything acknowledged, SIGTERM stops
every process cleanly, start-up failures are one sentence, and changing the
process count keeps every partition's data. Real processes, real clients."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kcore.protocol.api_keys import ApiKey
from tests.support import BrokerProcess, free_ports
from tests.support.refused_start import held, run_broker_to_exit
from tests.support.sockets import established
from tests.support.wire import WireClient

PARTITIONS = 6
# connections.max.idle.ms where a test waits for it: long enough that a
# connection just used is still open when the test looks (ss(8)).
IDLE_MS = 3000


def node(tmp_path: Path, processes: int, **overrides: str) -> BrokerProcess:
    settings = {"num.processes": str(processes), "num.partitions": str(PARTITIONS),
                "group.initial.rebalance.delay.ms": "0", **overrides}
    return BrokerProcess(tmp_path / "node", settings)


def broker_processes(supervisor: BrokerProcess) -> dict[int, psutil.Process]:
    """broker.id -> the broker process of the node."""
    found = {}
    for child in psutil.Process(supervisor.process.pid).children():
        for arg in child.cmdline():
            if arg.startswith("broker.id="):
                found[int(arg.split("=", 1)[1])] = child
    return found


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> list:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})
    errors: list = []
    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=str(i).encode(),
                         on_delivery=lambda err, msg: err and errors.append(err))
    assert producer.flush(60) == 0
    return errors


def read_all(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{time.time()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values: list[int] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(int(message.value()))
    finally:
        consumer.close()
    return values


def test_partitions_and_coordinators_spread_and_a_killed_process_comes_back(tmp_path):
    supervisor = node(tmp_path, 2).start()
    try:
        admin = AdminClient({"bootstrap.servers": supervisor.bootstrap})
        admin.create_topics([NewTopic("work", PARTITIONS, 1)])["work"].result(30)
        leaders = {p.id: p.leader for p in admin.list_topics("work", timeout=10)
                   .topics["work"].partitions.values()}
        assert sorted(set(leaders.values())) == [0, 1]
        assert produce(supervisor.bootstrap, "work", 3000) == []
        seen: set[int] = set()
        stop = threading.Event()
        groups = [threading.Thread(target=consume_into, args=(supervisor.bootstrap, seen, stop),
                                   daemon=True) for _ in range(3)]
        for thread in groups:
            thread.start()
        wait_until(lambda: len(seen) >= 1000, "the group got going")
        described = kcore("topics", "describe", "work", "--bootstrap-server", supervisor.bootstrap)
        assert "Leader: 0\t" in described and "Leader: 1\t" in described
        group = kcore("groups", "describe", "workers", "--bootstrap-server", supervisor.bootstrap)
        assert "coordinator: broker " in group
        victim = broker_processes(supervisor)[1]
        victim.kill()
        assert produce(supervisor.bootstrap, "work", 3000, start=3000) == []
        wait_until(lambda: len(seen) >= 6000, "the group consumed everything", timeout=90)
        stop.set()
        for thread in groups:
            thread.join(30)
        assert seen == set(range(6000))
        full_log = supervisor.log_path.read_text(errors="replace")  # log() keeps its last 5000 chars
        assert "died with status -9; restarting" in full_log
        assert sorted(broker_processes(supervisor)) == [0, 1]
    finally:
        supervisor.kill()


def kcore(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "kcore.cli.main", *args], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def consume_into(bootstrap: str, seen: set[int], stop: threading.Event) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "workers",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe(["work"])
    deadline = time.monotonic() + 120
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.add(int(message.value()))
    finally:
        consumer.close()


def wait_until(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)


def test_sigterm_stops_every_process_cleanly_and_the_next_start_recovers_nothing(tmp_path):
    supervisor = node(tmp_path, 2).start()
    assert produce(supervisor.bootstrap, "clean", 500) == []
    children = broker_processes(supervisor)
    assert supervisor.stop() == 0
    assert all(not child.is_running() for child in children.values())
    for index in range(2):
        assert (tmp_path / "node" / f"process-{index}" / ".kafka_cleanshutdown").exists()
    supervisor.start()
    try:
        assert sorted(read_all(supervisor.bootstrap, "clean", 500)) == list(range(500))
        assert "recover" not in supervisor.log().split("serves with")[-1].lower()
    finally:
        supervisor.kill()


def test_every_process_knows_the_node_once_it_serves(tmp_path):
    """The supervisor says it serves only once each process holds the
    node's metadata: a Metadata answer with no brokers made librdkafka give
    up on finding the controller for its request timeout (CreateTopics
    timed out in about 1 start of 6, right after the start)."""
    for attempt in range(6):
        supervisor = BrokerProcess(tmp_path / f"node-{attempt}", {"num.processes": "2"}).start()
        try:
            admin = AdminClient({"bootstrap.servers": supervisor.bootstrap})
            admin.create_topics([NewTopic("early", 2, 1)])["early"].result(10)
            for index in range(2):
                client = WireClient(supervisor.port + index)
                try:
                    answer = client.request(ApiKey.METADATA, 8, {"topics": None})
                finally:
                    client.close()
                assert sorted(b.node_id for b in answer.brokers) == [0, 1]
        finally:
            supervisor.kill()


def test_a_config_change_from_any_process_reaches_the_partition_owners(tmp_path):
    supervisor = node(tmp_path, 2).start()
    try:
        admin = AdminClient({"bootstrap.servers": supervisor.bootstrap})
        admin.create_topics([NewTopic("limited", 2, 1)])["limited"].result(30)
        resource = ConfigResource("topic", "limited", set_config={"max.message.bytes": "1000"})
        admin.alter_configs([resource])[resource].result(30)
        producer = Producer({"bootstrap.servers": supervisor.bootstrap, "linger.ms": 0})
        outcomes: list = []
        for partition in range(2):  # one on each process
            producer.produce("limited", b"x" * 5000, partition=partition,
                             on_delivery=lambda err, msg: outcomes.append(err.code() if err else 0))
        producer.flush(30)
        assert outcomes == [10, 10]  # MESSAGE_TOO_LARGE from both owners
    finally:
        supervisor.kill()


def test_processes_that_closed_each_others_idle_connections_still_agree(tmp_path):
    """connections.max.idle.ms closes the node's own channels between
    processes too (the supervisor's to each broker process, read from the
    kernel by socket inode); the next controller request opens new ones."""
    supervisor = node(tmp_path, 2, **{"connections.max.idle.ms": str(IDLE_MS)}).start()
    try:
        pids = [supervisor.process.pid, *(p.pid for p in broker_processes(supervisor).values())]
        ports = {supervisor.port, supervisor.port + 1}
        at_start = established(pids, ports)
        assert {c.peer_port for c in at_start} == ports, at_start
        deadline = time.monotonic() + 10 * IDLE_MS / 1000
        while at_start & established(pids, ports) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not at_start & established(pids, ports), f"open past {IDLE_MS} ms idle"
        admin = AdminClient({"bootstrap.servers": supervisor.bootstrap})
        admin.create_topics([NewTopic("late", PARTITIONS, 1)])["late"].result(30)
        reopened = established(pids, ports) - at_start
        assert {c.peer_port for c in reopened} == ports, reopened
        assert produce(supervisor.bootstrap, "late", 100) == []
        assert sorted(read_all(supervisor.bootstrap, "late", 100)) == list(range(100))
    finally:
        supervisor.kill()


def test_changing_the_process_count_keeps_every_partition(tmp_path):
    first = node(tmp_path, 1).start()
    assert produce(first.bootstrap, "kept", 2000) == []
    assert first.stop() == 0
    for processes in (2, 1):
        again = BrokerProcess(tmp_path / "node", {**first.overrides,
                                                  "num.processes": str(processes)},
                              port=first.port)
        again.start()
        try:
            assert sorted(read_all(again.bootstrap, "kept", 2000)) == list(range(2000))
        finally:
            assert again.stop() == 0


def test_a_taken_port_or_an_unusable_data_dir_fails_at_start_in_one_sentence(tmp_path):
    base = free_ports(2)
    with held(base + 1):
        result = run_broker_to_exit(tmp_path / "a", base, processes=2)
    assert result.returncode == 2
    assert f"port {base + 1} of broker process 1" in result.stderr
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    result = run_broker_to_exit(blocked, free_ports(2), processes=2)
    assert result.returncode == 2 and "cannot start" in result.stderr


def test_a_killed_supervisor_leaves_no_broker_process_behind(tmp_path):
    supervisor = node(tmp_path, 2).start()
    children = broker_processes(supervisor)
    os.kill(supervisor.process.pid, signal.SIGKILL)
    supervisor.process.wait()
    deadline = time.monotonic() + 30
    while any(child.is_running() and child.status() != psutil.STATUS_ZOMBIE
              for child in children.values()):
        assert time.monotonic() < deadline, "broker processes outlived their supervisor"
        time.sleep(0.1)

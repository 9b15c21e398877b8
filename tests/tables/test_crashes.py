"""The table stays exactly once through crashes: a broker SIGKILLed again
and again while it commits to the table (every 100 ms) under a steady
idempotent producer, and restarted each time, ends with a table that holds
every offset of its log once, every acknowledged record among them. The
same on a node of two broker processes, whose partitions are led by
different processes that commit to one table in one catalog."""
from __future__ import annotations

import random
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import BrokerProcess
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S
from tests.support.tables import table_rows, wait_for_offsets

PARTITIONS = 3
TABLES_ON = {"kcore.table.mode": "key_value", "kcore.table.commit.interval.ms": "100"}
KILLS = 4
SEND_INTERVAL_S = 0.001
PRODUCE_S = 60.0


class Producing:
    """An idempotent producer thread sending ``n-<i>`` round robin until
    stopped (bounded), keeping what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.acknowledged: set[bytes] = set()
        self.errors: list[str] = []
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "linger.ms": 5, "message.timeout.ms": 60_000})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acknowledged.add(message.value())
        else:
            self.errors.append(str(error))

    def _run(self) -> None:
        deadline = time.monotonic() + PRODUCE_S
        sequence = 0
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                self._producer.produce(self.topic, f"n-{sequence}".encode(), partition=sequence % PARTITIONS,
                                       on_delivery=self._delivered)
                sequence += 1
            except BufferError:
                pass
            self._producer.poll(SEND_INTERVAL_S)

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(60)


def log_ends(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def check_exactly_once(broker: BrokerProcess, topic: str, acknowledged: set[bytes]) -> None:
    ends = log_ends(broker.bootstrap, topic)
    wait_for_offsets(broker.data_dir, topic, ends)
    rows = table_rows(broker.data_dir, topic)
    for partition in range(PARTITIONS):
        offsets = [row["offset"] for row in rows if row["partition"] == partition]
        assert offsets == list(range(ends[partition])), \
            f"partition {partition}: {len(offsets)} rows for {ends[partition]} offsets, " \
            f"{len(offsets) - len(set(offsets))} doubled"
    values = {row["value"] for row in rows}
    assert acknowledged <= values, f"{len(acknowledged - values)} acknowledged records not in the table"


def test_sigkill_during_commits_neither_loses_nor_doubles_a_row(tmp_path):
    broker = BrokerProcess(tmp_path / "data", {}).start()
    rng = random.Random(7)
    try:
        topic = unique_topic("kv-kill")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=TABLES_ON)])[topic].result(ADMIN_TIMEOUT_S)
        with Producing(broker.bootstrap, topic) as producing:
            for _ in range(KILLS):
                time.sleep(rng.uniform(1.0, 2.5))
                broker.kill()
                broker.start()
            time.sleep(1.0)
        assert not producing.errors, producing.errors[:3]
        assert len(producing.acknowledged) > 1000
        check_exactly_once(broker, topic, producing.acknowledged)
    finally:
        broker.kill()


def test_the_processes_of_a_node_write_one_table(tmp_path):
    node = BrokerProcess(tmp_path / "node", {"num.processes": "2", "http.listeners": "",
                                             "schema.registry.listeners": ""}).start()
    try:
        topic = unique_topic("kv-node")
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=TABLES_ON)])[topic].result(ADMIN_TIMEOUT_S)
        with Producing(node.bootstrap, topic) as producing:
            time.sleep(2.0)
        assert not producing.errors, producing.errors[:3]
        check_exactly_once(node, topic, producing.acknowledged)
    finally:
        node.kill()

"""The table stays exactly once through crashes: a broker SIGKILLed again
and again while it commits to the table (every 100 ms) under a steady
idempotent producer, and restarted each time, ends with a table that holds
every offset of its log once, every acknowledged record among them. The
same on a node of two broker processes, whose partitions are led by
different processes that commit to one table in one catalog."""
from __future__ import annotations

import random
import time

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import BrokerProcess
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S
from tests.support.tables import PARTITIONS, Producing, check_exactly_once

TABLES_ON = {"kcore.table.mode": "key_value", "kcore.table.commit.interval.ms": "100"}
KILLS = 4


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
        check_exactly_once(broker.data_dir, broker.bootstrap, topic, producing.acknowledged)
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
        check_exactly_once(node.data_dir, node.bootstrap, topic, producing.acknowledged)
    finally:
        node.kill()

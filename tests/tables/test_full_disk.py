"""The warehouse's disk full: the table's commits fail (counted in
kcore_table_commit_errors_total, logged), produce and fetch go on, and
once space is back the table catches up, every record once. The warehouse
is a small tmpfs (root only; the test skips elsewhere); the catalog and
the log are elsewhere."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import BrokerProcess, free_port
from tests.support.compat import make_messages, unique_topic, wait_until
from tests.support.confluent import ADMIN_TIMEOUT_S, consume, produce
from tests.support.metrics import scrape
from tests.support.tables import shared_catalog, table_rows, wait_for_offsets
from tests.support.tmpfs import fill, mounted_tmpfs

PARTITIONS = 2
BATCH = 200
WAIT_S = 30.0


def errors(url: str, topic: str) -> float:
    return sum(value for (name, labels), value in scrape(url).items()
               if name == "kcore_table_commit_errors_total" and dict(labels).get("topic") == topic)


@pytest.mark.timeout(180)
def test_a_full_warehouse_is_retried_and_the_table_catches_up_once_space_is_back(tmp_path):
    with mounted_tmpfs(tmp_path / "warehouse", "16m") as warehouse:
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
        http = f"http://127.0.0.1:{free_port()}"
        broker = BrokerProcess(tmp_path / "data", {
            "http.listeners": http, "schema.registry.listeners": "", "kcore.table.catalog.uri": uri,
            "kcore.table.catalog.warehouse": warehouse.as_uri()}).start()
        try:
            topic = unique_topic("kv-full")
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic(topic, PARTITIONS, 1, config={
                "kcore.table.mode": "key_value", "kcore.table.commit.interval.ms": "200"})])[topic].result(
                ADMIN_TIMEOUT_S)
            where = shared_catalog(uri, warehouse.as_uri())
            first = make_messages(BATCH, "before", PARTITIONS)
            produce(broker.bootstrap, topic, first)
            wait_for_offsets(where, topic, dict.fromkeys(range(PARTITIONS), BATCH // PARTITIONS))
            filler = fill(warehouse, 0)
            second = make_messages(BATCH, "during", PARTITIONS)
            produce(broker.bootstrap, topic, second)
            wait_until(lambda: errors(http, topic) >= 1, WAIT_S, "a failed commit reported")
            read = consume(broker.bootstrap, topic, 2 * BATCH, range(PARTITIONS))
            assert sorted(m.value for m in read) == sorted(m.value for m in first + second)
            filler.unlink()
            wait_for_offsets(where, topic, dict.fromkeys(range(PARTITIONS), BATCH), WAIT_S * 2)
            rows = table_rows(where, topic)
            for partition in range(PARTITIONS):
                assert [r["offset"] for r in rows if r["partition"] == partition] == list(range(BATCH))
            assert "table of " + topic in broker.log()
        finally:
            broker.kill()

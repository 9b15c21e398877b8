"""A topic written as an Iceberg table on a three-broker cluster whose
brokers share one catalog (kcore.table.catalog.uri, a SQLite file here;
every broker on this machine reaches it): each leader writes its own
partitions, and when the leader of partition 0 is SIGKILLed mid-stream
and later restarted, the new leader takes the partition over from the
offset the table holds. At the end the table holds every offset of the
log once, every acknowledged record among them."""
from __future__ import annotations

import time

from tests.support.tables import PARTITIONS, Producing, check_exactly_once, shared_catalog


def test_a_leader_failover_hands_the_table_over_exactly_once(cluster_factory, tmp_path):
    uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", (tmp_path / "warehouse").as_uri()
    cluster = cluster_factory(3, {"kcore.table.catalog.uri": uri, "kcore.table.catalog.warehouse": warehouse,
                                  "min.insync.replicas": "2"})
    topic = "orders-table"
    cluster.create_topic(topic, PARTITIONS, 3, {"kcore.table.mode": "key_value",
                                                "kcore.table.commit.interval.ms": "200"})
    with Producing(cluster.bootstrap, topic) as producing:
        time.sleep(2.0)
        victim = cluster.wait_leader(topic, 0)
        cluster.brokers[victim].kill()
        cluster.wait_for(lambda: cluster.leader(topic, 0) not in (-1, victim), "a new leader of partition 0")
        time.sleep(2.0)
        cluster.brokers[victim].start()
        time.sleep(2.0)
    assert not producing.errors, producing.errors[:3]
    check_exactly_once(shared_catalog(uri, warehouse), cluster.bootstrap, topic, producing.acknowledged)

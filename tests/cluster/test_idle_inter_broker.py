"""Brokers close each other's idle connections too (connections.max.idle.ms
applies to every listener): the controller's and the replicas' clients
reconnect, so a cluster left quiet past the limit still works."""
from __future__ import annotations

import time

from confluent_kafka import Producer


def test_a_cluster_quiet_past_the_idle_limit_creates_and_replicates(cluster_factory):
    cluster = cluster_factory(overrides={"connections.max.idle.ms": "1000"})
    cluster.create_topic("before", 1, 3)
    time.sleep(3)  # every inter-broker connection without traffic is closed by now
    cluster.create_topic("after", 2, 3)  # LeaderAndIsr/UpdateMetadata on new connections
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    delivered = []
    for i in range(50):
        producer.produce("after", value=b"v%d" % i, partition=i % 2,
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 50
    cluster.wait_for(lambda: cluster.fully_replicated("after", 2, 3), "ISR of 3 on 'after'")

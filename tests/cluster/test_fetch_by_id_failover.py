"""A confluent-kafka (librdkafka 2.16) consumer on a real three-broker
cluster fetches by topic id (Fetch v16, KIP-516, as each broker's request
counter per version shows) and keeps reading, every acknowledged record
once and in order, when the partition's leader is SIGKILLed and another
broker leads; its commit after the move reads back. A real ZooKeeper."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from kcore.testing.broker import TEST_SETTINGS
from tests.cluster.test_closest_replica import messages, read
from tests.support import free_port
from tests.support.cluster import Cluster
from tests.support.confluent import produce
from tests.support.metrics import scrape

TOPIC = "by-id"
TOPIC_IDS_FETCH_VERSION = 13


def fetch_versions(port: int) -> dict[int, float]:
    """{version: requests} of consumer fetches a broker answered."""
    found: dict[int, float] = {}
    for (name, labels), value in scrape(f"http://127.0.0.1:{port}").items():
        label = dict(labels)
        if name == "kafka_network_requestmetrics_requests_total" and label.get("request") == "FetchConsumer":
            found[int(label["version"])] = value
    return found


def test_a_consumer_fetching_by_topic_id_reads_across_a_leader_kill(tmp_path, zookeeper):
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3, dict(TEST_SETTINGS))
    ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["http.listeners"] = f"http://127.0.0.1:{ports[broker_id]}"
    try:
        cluster.start()
        values, versions, committed = read_across_a_leader_kill(cluster, ports)
    finally:
        cluster.kill_all()
    assert values == [f"value-{i:06d}" for i in range(2000)]
    assert committed == 2000
    assert versions and min(versions) >= TOPIC_IDS_FETCH_VERSION, versions


def read_across_a_leader_kill(cluster: Cluster, ports: dict[int, int]):
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    leader = cluster.wait_leader(TOPIC, 0)
    produce(cluster.bootstrap, TOPIC, messages(0, 1000), acks="all")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "by-id-readers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
    values: list[str] = []
    try:
        consumer.subscribe([TOPIC])
        read(consumer, values, 1000)
        cluster.brokers[leader].kill()
        cluster.wait_for(lambda: cluster.leader(TOPIC, 0) not in (-1, leader),
                         f"a new leader replaced broker {leader}")
        produce(cluster.bootstrap, TOPIC, messages(1000, 1000), acks="all")
        read(consumer, values, 2000)
        time.sleep(1.0)  # anything read twice would arrive now
        while (message := consumer.poll(0.2)) is not None:
            values.append(message.value()[:12].decode())
        consumer.commit(asynchronous=False)
        (committed,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
    finally:
        consumer.close()
    versions: dict[int, float] = {}
    for broker_id, port in ports.items():
        if broker_id != leader:
            for version, count in fetch_versions(port).items():
                versions[version] = versions.get(version, 0) + count
    return values, versions, committed.offset

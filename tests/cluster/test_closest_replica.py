"""Fetching from the closest replica (KIP-392) on a real three-broker
cluster with racks and Kafka's RackAwareReplicaSelector: a confluent-kafka
(librdkafka) consumer whose client.rack is a follower's reads every byte
from that follower, as each broker's BytesOut counter on /metrics shows,
and keeps reading, every record once, when the partition's leader is
SIGKILLed and another broker leads. A real ZooKeeper."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from kcore.testing.broker import TEST_SETTINGS
from tests.support import free_port
from tests.support.cluster import Cluster
from tests.support.compat import Message
from tests.support.confluent import produce
from tests.support.metrics import scrape

TOPIC = "near"
RACKS = {1: "rack-1", 2: "rack-2", 3: "rack-3"}
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
REPLICATION_BYTES_OUT = "kafka_server_brokertopicmetrics_replicationbytesout_total"
READ_S = 60.0


def bytes_out(port: int, name: str = BYTES_OUT) -> float:
    """What a broker counted as sent to consumers (or followers) for TOPIC."""
    return scrape(f"http://127.0.0.1:{port}").get((name, (("topic", TOPIC),)), 0.0)


def messages(first: int, count: int) -> list[Message]:
    now = int(time.time() * 1000)
    return [Message(0, f"k{i}".encode(), f"value-{i:06d}-".encode() + b"x" * 200, (), now)
            for i in range(first, first + count)]


def read(consumer: Consumer, values: list[str], until: int) -> None:
    """Poll until ``values`` holds ``until`` records (bounded by READ_S)."""
    deadline = time.monotonic() + READ_S
    while len(values) < until:
        assert time.monotonic() < deadline, f"read {len(values)} of {until} records"
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert message.error() is None, message.error()
        values.append(message.value()[:12].decode())


def test_a_consumer_in_a_followers_rack_reads_from_it_and_through_a_leader_kill(tmp_path, zookeeper):
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3,
                      {**TEST_SETTINGS, "replica.selector.class": SELECTOR}, RACKS)
    ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["http.listeners"] = f"http://127.0.0.1:{ports[broker_id]}"
    try:
        cluster.start()
        values = read_near_follower_then_kill_its_leader(cluster, ports)
    finally:
        cluster.kill_all()
    assert values == [f"value-{i:06d}" for i in range(3000)]


def read_near_follower_then_kill_its_leader(cluster: Cluster, ports: dict[int, int]) -> list[str]:
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    leader = cluster.wait_leader(TOPIC, 0)
    near = next(broker_id for broker_id in sorted(RACKS) if broker_id != leader)
    produce(cluster.bootstrap, TOPIC, messages(0, 2000), acks="all")

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "near-readers",
                         "client.rack": RACKS[near], "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read(consumer, values, 2000)
        sent = {broker_id: bytes_out(port) for broker_id, port in ports.items()}
        # Every record byte came from the follower in the consumer's rack;
        # the leader answered only with where to read (no data).
        assert sent[near] >= 2000 * 200, sent
        assert [sent[i] for i in sorted(RACKS) if i != near] == [0.0, 0.0], sent
        assert bytes_out(ports[leader], REPLICATION_BYTES_OUT) > 0
        # kafka-python (with a fetch session) and aiokafka follow the same answer.
        for python_read in (read_with_kafka_python, read_with_aiokafka):
            assert python_read(cluster.bootstrap, RACKS[near], 2000) == values[:2000]
        after = {broker_id: bytes_out(port) for broker_id, port in ports.items()}
        assert after[near] >= sent[near] + 2 * 2000 * 200, (sent, after)
        assert [after[i] for i in sorted(RACKS) if i != near] == [0.0, 0.0], after

        cluster.brokers[leader].kill()
        cluster.wait_for(lambda: cluster.leader(TOPIC, 0) not in (-1, leader),
                         f"a new leader replaced broker {leader}")
        produce(cluster.bootstrap, TOPIC, messages(2000, 1000), acks="all")
        read(consumer, values, 3000)
        time.sleep(1.0)  # anything read twice would arrive now
        while (message := consumer.poll(0.2)) is not None:
            values.append(message.value()[:12].decode())
    finally:
        consumer.close()
    return values


def read_with_kafka_python(bootstrap: str, rack: str, count: int) -> list[str]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             client_rack=rack, fetch_max_wait_ms=100, auto_offset_reset="earliest")
    values: list[str] = []
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0)])
        deadline = time.monotonic() + READ_S
        while len(values) < count:
            assert time.monotonic() < deadline, f"kafka-python read {len(values)} of {count}"
            for records in consumer.poll(timeout_ms=200).values():
                values += [record.value[:12].decode() for record in records]
    finally:
        consumer.close()
    return values


def read_with_aiokafka(bootstrap: str, rack: str, count: int) -> list[str]:
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTopicPartition

    async def main() -> list[str]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False, client_rack=rack,
                                    fetch_max_wait_ms=100, auto_offset_reset="earliest")
        await consumer.start()
        values: list[str] = []
        try:
            consumer.assign([AioTopicPartition(TOPIC, 0)])
            deadline = time.monotonic() + READ_S
            while len(values) < count:
                assert time.monotonic() < deadline, f"aiokafka read {len(values)} of {count}"
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    values += [record.value[:12].decode() for record in records]
        finally:
            await consumer.stop()
        return values

    return asyncio.run(main())

"""`kcore groups` against a real broker, with a real client's group."""
from __future__ import annotations

import subprocess

from kafka import KafkaConsumer, KafkaProducer

from tests.support.cli import kcore_cli


def kcore(broker, *args: str) -> subprocess.CompletedProcess:
    return kcore_cli("groups", *args, "--bootstrap-server", broker.bootstrap)


def consume_and_commit(broker, group: str, topic: str, count: int) -> None:
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    seen = 0
    for _ in consumer:
        seen += 1
        if seen == count:
            break
    consumer.commit()
    consumer.close()
    assert seen == count


def test_list_describe_reset_and_delete_a_group(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0", "num.partitions": "2"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(40):
        producer.send("orders", b"%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    consume_and_commit(broker, "billing", "orders", 40)

    listed = kcore(broker, "list")
    assert listed.returncode == 0 and "billing" in listed.stdout.split()

    described = kcore(broker, "describe", "billing")
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith("billing")]
    assert sorted((r[1], r[2], r[3], r[4], r[5]) for r in rows) == [
        ("orders", "0", "20", "20", "0"), ("orders", "1", "20", "20", "0")]

    dry = kcore(broker, "reset-offsets", "billing", "--topic", "orders", "--to-offset", "5")
    assert dry.returncode == 0 and "Dry run" in dry.stdout
    assert "20" in kcore(broker, "describe", "billing").stdout.split()  # unchanged

    done = kcore(broker, "reset-offsets", "billing", "--topic", "orders", "--to-earliest",
                 "--partition", "1", "--execute")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in kcore(broker, "describe", "billing").stdout.splitlines()
            if line.startswith("billing")]
    assert sorted((r[2], r[3], r[5]) for r in rows) == [("0", "20", "0"), ("1", "0", "20")]

    deleted = kcore(broker, "delete", "billing")
    assert deleted.returncode == 0, deleted.stderr
    assert "billing" not in kcore(broker, "list").stdout.split()
    missing = kcore(broker, "describe", "nope")
    # An unknown group is Dead with no members, as Kafka's DescribeGroups says.
    assert missing.returncode == 0 and missing.stdout.startswith("Group nope is Dead with 0 member(s)")


def test_describe_a_consumer_protocol_group(broker_factory):
    """A KIP-848 group: `kcore groups describe` reads it with
    ConsumerGroupDescribe (DescribeGroups knows only classic groups) and
    shows who owns each partition."""
    from confluent_kafka import Consumer
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0", "num.partitions": "2"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(10):
        producer.send("events", b"%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kip848",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["events"])
        seen = 0
        for _ in range(200):
            message = consumer.poll(0.1)
            seen += message is not None and not message.error()
            if seen == 10:
                break
        consumer.commit(asynchronous=False)
        described = kcore(broker, "describe", "kip848")
        assert described.returncode == 0, described.stderr
        rows = [line.split() for line in described.stdout.splitlines() if line.startswith("kip848")]
        assert sorted((r[1], r[2], r[3]) for r in rows) == [("events", "0", "5"), ("events", "1", "5")]
        assert consumer.memberid() in described.stdout
    finally:
        consumer.close()

"""Committed offsets and ListOffsets through each real client at the highest
version it knows: librdkafka commits and fetches with OffsetCommit /
OffsetFetch v9 (require_stable, as its consumers read_committed by
default) and lists offsets with ListOffsets v7 (max timestamp); kafka-python's
admin reads two groups' offsets in one OffsetFetch v8, its consumer lists
offsets with v11; aiokafka stays at its own older versions. Each reads what
the others wrote."""
from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata

from tests.support.compat import make_messages, now_ms, unique_topic
from tests.support.confluent import produce

PARTITIONS = 2


def confluent_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def confluent_committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_each_client_reads_the_offsets_another_committed(shared_broker, admin):
    bootstrap = shared_broker.bootstrap
    topic = unique_topic("committed")
    produce(bootstrap, topic, make_messages(40, "c", PARTITIONS))
    first, second = f"{topic}-a", f"{topic}-b"
    confluent_commit(bootstrap, first, topic, {0: 7, 1: 9})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=second, enable_auto_commit=False)
    try:
        consumer.commit({KafkaTopicPartition(topic, 0): OffsetAndMetadata(3, "kp", -1)})
    finally:
        consumer.close()
    assert confluent_committed(bootstrap, first, topic) == {0: 7, 1: 9}
    assert confluent_committed(bootstrap, second, topic)[0] == 3
    # kafka-python's admin: both groups in one OffsetFetch v8.
    found = admin.list_group_offsets({first: None, second: None})
    assert {group: {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}
            for group, offsets in found.items()} == {first: {0: 7, 1: 9}, second: {0: 3}}
    # librdkafka's admin: OffsetFetch at its highest version.
    client = AdminClient({"bootstrap.servers": bootstrap})
    request = [ConsumerGroupTopicPartitions(first, [TopicPartition(topic, p) for p in range(PARTITIONS)])]
    (future,) = client.list_consumer_group_offsets(request).values()
    assert {tp.partition: tp.offset for tp in future.result(timeout=10).topic_partitions} == {0: 7, 1: 9}
    assert asyncio.run(aiokafka_committed(bootstrap, second, topic)) == 3


async def aiokafka_committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return await consumer.committed(AioTopicPartition(topic, 0))
    finally:
        await consumer.stop()


def test_offsets_for_times_and_the_max_timestamp_through_each_client(shared_broker):
    bootstrap = shared_broker.bootstrap
    topic = unique_topic("times")
    base = now_ms() - 60_000
    produce(bootstrap, topic, make_messages(20, "t", 1, base_timestamp=base))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic})
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, base + 5)], timeout=10)
        assert found.offset == 5
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        assert (low, high) == (0, 20)
    finally:
        consumer.close()
    python_consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        partition = KafkaTopicPartition(topic, 0)
        times = python_consumer.offsets_for_times({partition: base + 12})
        assert times[partition].offset == 12
        assert python_consumer.end_offsets([partition]) == {partition: 20}
        assert python_consumer.beginning_offsets([partition]) == {partition: 0}
    finally:
        python_consumer.close()

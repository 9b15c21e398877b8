"""Fetch sessions (KIP-227) with a real client that uses them: kafka-python
opens one per broker by default (enable_incremental_fetch_sessions) and
then sends incremental fetches. librdkafka and aiokafka never do (session
id 0, epoch -1: their suites cover the sessionless answers).

Checked here: the session is granted and its epoch advances, every
message arrives once and in order across many partitions, pausing
partitions (forgotten by the session) and resuming them loses nothing,
and a broker that keeps no sessions still serves the client."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.support.compat import READ_TIMEOUT_S, make_messages, start_broker, unique_topic
from tests.support.kafka_python import create_topic, produce

PARTITIONS = 24


@pytest.fixture
def admin_topic(shared_broker):
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    topic = unique_topic("kp-sessions")
    create_topic(admin, topic, PARTITIONS)
    admin.close()
    return topic


def assigned_consumer(bootstrap: str, topic: str) -> KafkaConsumer:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100, enable_incremental_fetch_sessions=True)
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    return consumer


def poll_values(consumer: KafkaConsumer, count: int) -> dict[int, list[bytes]]:
    """Poll until ``count`` records came; values per partition, in order."""
    got: dict[int, list[bytes]] = {}
    deadline = time.monotonic() + READ_TIMEOUT_S
    while sum(map(len, got.values())) < count:
        assert time.monotonic() < deadline, f"{sum(map(len, got.values()))} of {count} records"
        for tp, records in consumer.poll(timeout_ms=200).items():
            got.setdefault(tp.partition, []).extend(r.value for r in records)
    return got


def expected_values(messages) -> dict[int, list[bytes]]:
    wanted: dict[int, list[bytes]] = {}
    for message in messages:
        wanted.setdefault(message.partition, []).append(message.value)
    return wanted


def session_of(consumer: KafkaConsumer):
    [handler] = consumer._fetcher._session_handlers.values()
    return handler.next_metadata


def test_kafka_python_gets_a_session_and_every_message_once(shared_broker, admin_topic):
    consumer = assigned_consumer(shared_broker.bootstrap, admin_topic)
    try:
        first = make_messages(PARTITIONS * 20, "s1", partitions=PARTITIONS)
        produce(shared_broker.bootstrap, admin_topic, first)
        assert poll_values(consumer, len(first)) == expected_values(first)
        session_id, epoch = session_of(consumer).session_id, session_of(consumer).epoch
        assert session_id != 0 and epoch >= 1  # the next fetch is incremental
        second = make_messages(30, "s2", partitions=3)  # a few partitions only
        produce(shared_broker.bootstrap, admin_topic, second)
        assert poll_values(consumer, len(second)) == expected_values(second)
        assert session_of(consumer).session_id == session_id
        assert session_of(consumer).epoch > epoch
    finally:
        consumer.close()


def test_paused_partitions_are_forgotten_and_resumed_without_loss(shared_broker, admin_topic):
    consumer = assigned_consumer(shared_broker.bootstrap, admin_topic)
    try:
        consumer.poll(timeout_ms=300)  # the session opens on the (empty) partitions
        paused = [TopicPartition(admin_topic, p) for p in range(0, PARTITIONS, 2)]
        consumer.pause(*paused)
        messages = make_messages(PARTITIONS * 5, "p", partitions=PARTITIONS)
        produce(shared_broker.bootstrap, admin_topic, messages)
        odd = [m for m in messages if m.partition % 2]
        assert poll_values(consumer, len(odd)) == expected_values(odd)
        assert not consumer.poll(timeout_ms=500)
        consumer.resume(*paused)
        even = [m for m in messages if m.partition % 2 == 0]
        assert poll_values(consumer, len(even)) == expected_values(even)
        assert session_of(consumer).session_id != 0
    finally:
        consumer.close()


def test_a_broker_without_session_slots_serves_kafka_python_sessionless(tmp_path):
    broker = start_broker(tmp_path / "data", {"max.incremental.fetch.session.cache.slots": "0"})
    try:
        from kafka import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        topic = unique_topic("kp-nosessions")
        create_topic(admin, topic, PARTITIONS)
        admin.close()
        consumer = assigned_consumer(broker.bootstrap, topic)
        try:
            messages = make_messages(PARTITIONS * 4, "n", partitions=PARTITIONS)
            produce(broker.bootstrap, topic, messages)
            assert poll_values(consumer, len(messages)) == expected_values(messages)
            assert session_of(consumer).session_id == 0
        finally:
            consumer.close()
    finally:
        broker.kill()

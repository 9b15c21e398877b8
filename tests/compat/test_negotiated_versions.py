"""Each real client negotiates the highest version both it and kcore know
for the core APIs, read from the broker's own request counter per API and
version after a produce, a group consume and a commit: librdkafka 2.16
sends Fetch v16, Produce v10, Metadata v13, ListOffsets v7, OffsetCommit
and OffsetFetch v9 (its own maximums, below what kcore serves);
kafka-python, aiokafka 0.14 and KafkaJS 2.2.4 go to their own maximums
too (the highest request classes their sources define: aiokafka's
Produce 7, Fetch 11, Metadata 5, ListOffsets, OffsetCommit and
OffsetFetch 3; KafkaJS's Produce 7, Fetch 11, Metadata 6, ListOffsets 3,
OffsetCommit 5, OffsetFetch 4). Every record comes back once, and the
commit reads back."""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata

from kcore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from tests.support import BrokerProcess, free_port, kafkajs
from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client, produce
from tests.support.kafka_python import produce as kafka_python_produce
from tests.support.kafkajs import requires_kafkajs
from tests.support.metrics import scrape

PARTITIONS = 2
COUNT = 200
WAIT_S = 30.0
SETTLE_S = 1.0
CORE = {"Produce": ApiKey.PRODUCE, "FetchConsumer": ApiKey.FETCH, "Metadata": ApiKey.METADATA,
        "ListOffsets": ApiKey.LIST_OFFSETS, "OffsetCommit": ApiKey.OFFSET_COMMIT,
        "OffsetFetch": ApiKey.OFFSET_FETCH}
LIBRDKAFKA_TOPS = {"Produce": 10, "FetchConsumer": 16, "Metadata": 13, "ListOffsets": 7,
                   "OffsetCommit": 9, "OffsetFetch": 9}
KAFKA_PYTHON_TOPS = {"Produce": 9, "FetchConsumer": 12, "Metadata": 13, "ListOffsets": 11,
                     "OffsetCommit": 8, "OffsetFetch": 8}
AIOKAFKA_TOPS = {"Produce": 7, "FetchConsumer": 11, "Metadata": 5, "ListOffsets": 3,
                 "OffsetCommit": 3, "OffsetFetch": 3}
KAFKAJS_TOPS = {"Produce": 7, "FetchConsumer": 11, "Metadata": 6, "ListOffsets": 3,
                "OffsetCommit": 5, "OffsetFetch": 4}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    http_port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("negotiated") / "data", {
        "http.listeners": f"http://127.0.0.1:{http_port}", "group.initial.rebalance.delay.ms": "0"}).start()
    process.metrics_url = f"http://127.0.0.1:{http_port}"
    yield process
    process.kill()


def core_versions(url: str) -> dict[str, dict[str, float]]:
    """{request name: {version: count}} of the core APIs."""
    found: dict[str, dict[str, float]] = {}
    for (name, labels), value in scrape(url).items():
        label = dict(labels)
        if name == "kafka_network_requestmetrics_requests_total" and label.get("request") in CORE:
            found.setdefault(label["request"], {})[label["version"]] = value
    return found


def settled_versions(url: str) -> dict[str, dict[str, float]]:
    """core_versions once no request is counted for a while: a closed
    client's last fetch is counted when its long poll ends (up to
    librdkafka's fetch.wait.max.ms, 500 ms, after the close), and must not
    fall into the next test's window (bounded)."""
    previous = core_versions(url)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        current = core_versions(url)
        if current == previous:
            return current
        previous = current
    raise AssertionError(f"requests still counted after {WAIT_S:g}s: {previous}")


def sent_since(before: dict, after: dict) -> dict[str, set[int]]:
    """The versions of each core API with requests between two scrapes."""
    return {request: {int(v) for v, count in versions.items() if count > before.get(request, {}).get(v, 0)}
            for request, versions in after.items()}


def create(bootstrap: str, topic: str) -> None:
    admin = admin_client(bootstrap)  # alive until the result is in
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(ADMIN_TIMEOUT_S)


def expected(client_tops: dict[str, int]) -> dict[str, set[int]]:
    return {request: {min(top, SUPPORTED_VERSIONS[CORE[request]][1])} for request, top in client_tops.items()}


def test_librdkafka_negotiates_its_top_versions_and_reads_everything_once(broker):
    topic = unique_topic("negotiated")
    create(broker.bootstrap, topic)
    before = settled_versions(broker.metrics_url)
    produce(broker.bootstrap, topic, make_messages(COUNT, "n", PARTITIONS))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic}-g",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        consumer.close()
    assert sorted(values) == sorted(m.value for m in make_messages(COUNT, "n", PARTITIONS))
    assert sum(tp.offset for tp in committed) == COUNT and (low, high) == (0, COUNT // PARTITIONS)
    assert sent_since(before, core_versions(broker.metrics_url)) == expected(LIBRDKAFKA_TOPS)


def test_kafka_python_negotiates_its_top_versions(broker):
    topic = unique_topic("negotiated-kp")
    create(broker.bootstrap, topic)
    before = settled_versions(broker.metrics_url)
    kafka_python_produce(broker.bootstrap, topic, make_messages(COUNT, "k", PARTITIONS))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=f"{topic}-g",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        partitions = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < COUNT and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [record.value for record in records]
        consumer.commit({tp: OffsetAndMetadata(COUNT // PARTITIONS, "", -1) for tp in partitions})
        committed = [consumer.committed(tp) for tp in partitions]
        ends = consumer.end_offsets(partitions)
    finally:
        consumer.close()
    assert sorted(values) == sorted(m.value for m in make_messages(COUNT, "k", PARTITIONS))
    assert committed == [COUNT // PARTITIONS] * PARTITIONS and set(ends.values()) == {COUNT // PARTITIONS}
    assert sent_since(before, core_versions(broker.metrics_url)) == expected(KAFKA_PYTHON_TOPS)


def test_aiokafka_negotiates_its_top_versions(broker):
    topic = unique_topic("negotiated-aio")
    create(broker.bootstrap, topic)
    before = settled_versions(broker.metrics_url)
    messages = make_messages(COUNT, "a", PARTITIONS)
    round_trip = aiokafka_round(broker.bootstrap, topic, messages)
    values, committed, ends = asyncio.run(asyncio.wait_for(round_trip, WAIT_S * 2))
    assert sorted(values) == sorted(m.value for m in messages)
    assert committed == [COUNT // PARTITIONS] * PARTITIONS and set(ends.values()) == {COUNT // PARTITIONS}
    assert sent_since(before, core_versions(broker.metrics_url)) == expected(AIOKAFKA_TOPS)


async def aiokafka_round(bootstrap: str, topic: str, messages) -> tuple[list[bytes], list[int], dict]:
    """Produce ``messages``, read them back in a group, commit, and read the
    commit and the end offsets back."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for message in messages:
            await producer.send(topic, message.value, key=message.key, partition=message.partition)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"{topic}-g",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < len(messages) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                values += [record.value for record in records]
        await consumer.commit()
        partitions = [AioTopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = [await consumer.committed(tp) for tp in partitions]
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return values, committed, ends


@requires_kafkajs
def test_kafkajs_negotiates_its_top_versions(broker):
    topic = unique_topic("negotiated-js")
    create(broker.bootstrap, topic)
    before = settled_versions(broker.metrics_url)
    messages = make_messages(COUNT, "j", PARTITIONS)
    conn = kafkajs.connection(broker.bootstrap)
    kafkajs.produce(conn, topic, messages)
    group = f"{topic}-g"
    read = kafkajs.consume(conn, topic, COUNT, group)
    sent = sent_since(before, core_versions(broker.metrics_url))
    assert sorted(kafkajs.decode(r["value"]) for r in read) == sorted(m.value for m in messages)
    assert kafkajs_committed(broker.bootstrap, group, topic) == COUNT
    assert sent == expected(KAFKAJS_TOPS)


def kafkajs_committed(bootstrap: str, group: str, topic: str) -> int:
    """The sum of the group's committed offsets (asked with librdkafka)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in committed)

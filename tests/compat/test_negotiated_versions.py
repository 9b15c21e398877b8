"""Each real client negotiates the highest version both it and kcore know
for the core APIs, read from the broker's own request counter per API and
version after a produce, a group consume and a commit: librdkafka 2.16
sends Fetch v16, Produce v10, Metadata v13, ListOffsets v7, OffsetCommit
and OffsetFetch v9 (its own maximums, below what kcore serves);
kafka-python's consumer and producer go to their own maximums too. Every
record comes back once, and the commit reads back."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata

from kcore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from tests.support import BrokerProcess, free_port
from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client, produce
from tests.support.kafka_python import produce as kafka_python_produce
from tests.support.metrics import scrape

PARTITIONS = 2
COUNT = 200
WAIT_S = 30.0
CORE = {"Produce": ApiKey.PRODUCE, "FetchConsumer": ApiKey.FETCH, "Metadata": ApiKey.METADATA,
        "ListOffsets": ApiKey.LIST_OFFSETS, "OffsetCommit": ApiKey.OFFSET_COMMIT,
        "OffsetFetch": ApiKey.OFFSET_FETCH}
LIBRDKAFKA_TOPS = {"Produce": 10, "FetchConsumer": 16, "Metadata": 13, "ListOffsets": 7,
                   "OffsetCommit": 9, "OffsetFetch": 9}
KAFKA_PYTHON_TOPS = {"Produce": 9, "FetchConsumer": 12, "Metadata": 13, "ListOffsets": 11,
                     "OffsetCommit": 8, "OffsetFetch": 8}


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
    before = core_versions(broker.metrics_url)
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
    before = core_versions(broker.metrics_url)
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

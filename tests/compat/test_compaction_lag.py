"""max.compaction.lag.ms seen through the real clients (KIP-354).

What Kafka answers: on a compacted topic with max.compaction.lag.ms, the
active segment rolls once its first record is that old (on the next
append), and a dirty segment that old is cleaned even while the log's
dirty ratio stays below min.cleanable.dirty.ratio. A topic identical but
for the lag (rolling as often through segment.ms) keeps the same dirty
segment uncleaned, its superseded records still readable.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from tests.support.compat import start_broker, unique_topic, wait_until
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client

LAG_MS = 2000
# The cleaner looks for due logs every 100 ms instead of Kafka's 15 s.
CLEANER_BACKOFF_MS = 100
# Phase 1 writes this many distinct keys (the clean part); phase 2 updates
# UPDATED of them, well below a dirty ratio of 0.5.
KEYS, UPDATED = 200, 5
# Roll, clean and read on this shared 2-core machine, beyond the lag itself.
SLACK_S = 15.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    started = start_broker(tmp_path_factory.mktemp("lag") / "data",
                           {"log.cleaner.backoff.ms": str(CLEANER_BACKOFF_MS)})
    yield started
    started.kill()


def create_pair(bootstrap: str, prefix: str) -> tuple[str, str]:
    """A topic with the lag and a control rolling as often without it."""
    lagged, control = unique_topic(f"{prefix}-lag"), unique_topic(f"{prefix}-control")
    topics = [NewTopic(lagged, 1, 1, config={"cleanup.policy": "compact",
                                             "max.compaction.lag.ms": str(LAG_MS)}),
              NewTopic(control, 1, 1, config={"cleanup.policy": "compact", "segment.ms": str(LAG_MS)})]
    admin = admin_client(bootstrap)
    for future in admin.create_topics(topics).values():
        future.result(ADMIN_TIMEOUT_S)
    return lagged, control


class Confluent:
    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def send(self, topic: str, pairs: list[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            self.producer.produce(topic, value, key, partition=0)
        assert self.producer.flush(30) == 0

    def offsets(self, topic: str) -> list[int]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kcore-lag",
                             "enable.auto.commit": False})
        try:
            end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            seen: list[int] = []
            while not seen or seen[-1] < end - 1:
                for record in consumer.consume(1000, 1.0):
                    assert record.error() is None, record.error()
                    seen.append(record.offset())
            return seen
        finally:
            consumer.close()


class KafkaPython:
    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)

    def send(self, topic: str, pairs: list[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            self.producer.send(topic, key=key, value=value, partition=0)
        self.producer.flush(30)

    def offsets(self, topic: str) -> list[int]:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False)
        try:
            partition = KafkaTopicPartition(topic, 0)
            end = consumer.end_offsets([partition])[partition]
            consumer.assign([partition])
            consumer.seek_to_beginning(partition)
            seen: list[int] = []
            while not seen or seen[-1] < end - 1:
                for records in consumer.poll(timeout_ms=1000).values():
                    seen += [record.offset for record in records]
            return seen
        finally:
            consumer.close()


@pytest.mark.parametrize("client_class", [Confluent, KafkaPython], ids=["librdkafka", "kafka-python"])
def test_a_dirty_segment_is_compacted_within_the_lag_below_the_dirty_ratio(broker, client_class):
    client = client_class(broker.bootstrap)
    lagged, control = create_pair(broker.bootstrap, client_class.__name__.lower())
    first = [(b"k%03d" % i, b"first-%03d:" % i + b"x" * 200) for i in range(KEYS)]
    for topic in (lagged, control):
        client.send(topic, first)
    time.sleep(LAG_MS / 1000 + 0.2)
    for topic in (lagged, control):
        client.send(topic, [(b"roll-1", b"r")])  # rolls: the first segment is LAG_MS old
        client.send(topic, [(b"k%03d" % i, b"second") for i in range(UPDATED)])
    written = time.monotonic()
    time.sleep(LAG_MS / 1000 + 0.2)
    for topic in (lagged, control):
        client.send(topic, [(b"roll-2", b"r")])  # rolls the segment holding the updates

    superseded = set(range(UPDATED))
    wait_until(lambda: not superseded & set(client.offsets(lagged)),
               LAG_MS / 1000 + SLACK_S, "the superseded records of the lagged topic to be compacted")
    assert time.monotonic() - written < LAG_MS / 1000 + SLACK_S
    time.sleep(1.0)  # ten cleaner rounds: the control's 3% dirty ratio stays below 0.5
    assert superseded <= set(client.offsets(control))
    assert len(client.offsets(lagged)) == KEYS + 2

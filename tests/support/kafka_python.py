"""kafka-python as a test client: produce, consume, admin calls."""
from __future__ import annotations

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from tests.support.compat import (
    PARTITIONS,
    READ_TIMEOUT_S,
    Message,
    received,
    wait_until,
)

CREATE_TIME = 0


FLUSH_TIMEOUT_S = 90.0


def produce(bootstrap: str, topic: str, messages: list[Message], **config) -> None:
    """Send every message to its partition, flush, and check every future."""
    settings = {"bootstrap_servers": bootstrap, "linger_ms": 5, "batch_size": 256 * 1024,
                "enable_idempotence": config.get("acks", "all") == "all", **config}
    producer = KafkaProducer(**settings)
    try:
        futures = [producer.send(topic, value=m.value, key=m.key, partition=m.partition,
                                 timestamp_ms=m.timestamp, headers=list(m.headers))
                   for m in messages]
        producer.flush(FLUSH_TIMEOUT_S)
    finally:
        producer.close(timeout=10)
    failures = [f.exception for f in futures if not f.is_done or f.failed()]
    assert not failures, f"{len(failures)} sends failed, first: {failures[:3]}"


def new_consumer(bootstrap: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         fetch_max_wait_ms=100, max_poll_records=20_000)


def consume(bootstrap: str, topic: str, expected_total: int | None = None,
            partitions=range(PARTITIONS)) -> list[Message]:
    """Everything below each partition's high watermark, from offset 0, with
    contiguous offsets; with expected_total, first wait (bounded) until the
    high watermarks add up to it."""
    consumer = new_consumer(bootstrap)
    try:
        assigned = [TopicPartition(topic, p) for p in partitions]
        if expected_total is not None:
            wait_until(lambda: sum(consumer.end_offsets(assigned).values()) >= expected_total,
                       READ_TIMEOUT_S, f"{expected_total} messages in {topic}")
        ends = {tp.partition: offset for tp, offset in consumer.end_offsets(assigned).items()}
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        next_offset = {p: 0 for p in partitions}
        messages = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(next_offset[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"read stalled at {next_offset}, high watermarks {ends}"
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    assert record.offset == next_offset[tp.partition], (
                        f"partition {tp.partition}: offset {record.offset} after {next_offset[tp.partition] - 1}")
                    next_offset[tp.partition] += 1
                    assert record.timestamp_type == CREATE_TIME
                    messages.append(received(tp.partition, record.key, record.value, record.headers,
                                             record.timestamp))
        return messages
    finally:
        consumer.close()


def create_topic(admin: KafkaAdminClient, topic: str, partitions: int, configs: dict | None = None) -> dict:
    return admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                        "configs": configs or {}}})


def topic_configs(admin: KafkaAdminClient, topic: str) -> dict[str, dict]:
    found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    return found["topic"][topic]

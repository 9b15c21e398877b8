"""confluent-kafka (librdkafka) as a test client: produce, consume, admin calls."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigEntry,
    ConfigResource,
    OffsetSpec,
)
from confluent_kafka.error import KafkaError

from tests.support.compat import (
    PARTITIONS,
    READ_TIMEOUT_S,
    Message,
    received,
    wait_until,
)

PRODUCE_TIMEOUT_S = 90.0


ADMIN_TIMEOUT_S = 15.0


def produce(bootstrap: str, topic: str, messages: list[Message], **config) -> None:
    """Produce every message to its partition and wait for all delivery reports."""
    errors: list[KafkaError] = []
    delivered = 0

    def on_delivery(error, _message) -> None:
        nonlocal delivered
        if error is not None:
            errors.append(error)
        else:
            delivered += 1

    client_errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "error_cb": client_errors.append,
                         **config})
    deadline = time.monotonic() + PRODUCE_TIMEOUT_S
    for message in messages:
        while True:
            try:
                producer.produce(topic, message.value, message.key, partition=message.partition,
                                 timestamp=message.timestamp, headers=list(message.headers) or None,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                assert time.monotonic() < deadline, "local produce queue stayed full"
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    assert left == 0, f"{left} messages left undelivered; client errors: {client_errors[-5:]}"
    assert not errors, f"{len(errors)} delivery errors, first: {errors[:3]}"
    assert delivered == len(messages)


def new_consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "kcore-compat-assign-only",
                     "enable.auto.commit": False, "enable.auto.offset.store": False,
                     "fetch.wait.max.ms": 100})


def end_offsets(consumer: Consumer, topic: str, partitions) -> dict[int, int]:
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}


def consume(bootstrap: str, topic: str, expected_total: int | None = None,
            partitions=range(PARTITIONS)) -> list[Message]:
    """Everything below the high watermark of each partition, from offset 0;
    offsets must be contiguous. With expected_total, first wait (bounded)
    until the high watermarks add up to it (acks=0 gives no confirmation)."""
    consumer = new_consumer(bootstrap)
    try:
        if expected_total is not None:
            wait_until(lambda: sum(end_offsets(consumer, topic, partitions).values()) >= expected_total,
                       READ_TIMEOUT_S, f"{expected_total} messages in {topic}")
        ends = end_offsets(consumer, topic, partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        next_offset = {p: 0 for p in partitions}
        messages = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(next_offset[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"read stalled at {next_offset}, high watermarks {ends}"
            for record in consumer.consume(10_000, 0.5):
                if record.error():
                    raise KafkaException(record.error())
                partition = record.partition()
                assert record.offset() == next_offset[partition], (
                    f"partition {partition}: offset {record.offset()} after {next_offset[partition] - 1}")
                next_offset[partition] += 1
                timestamp_type, timestamp = record.timestamp()
                assert timestamp_type == TIMESTAMP_CREATE_TIME
                messages.append(received(partition, record.key(), record.value(), record.headers(), timestamp))
        return messages
    finally:
        consumer.close()


def consume_to_end(bootstrap: str, topic: str, partitions=range(PARTITIONS),
                   isolation_level: str = "read_committed") -> list[Message]:
    """Everything below each partition's end offset (the last stable offset
    for read_committed), from offset 0. Done by position, never by count:
    transaction markers and (read_committed) aborted records leave offsets
    that no record comes for, and librdkafka moves its position past them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kcore-compat-assign-only",
                         "enable.auto.commit": False, "isolation.level": isolation_level,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        position = {p: 0 for p in partitions}
        messages = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(position[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"read stalled at {position}, end offsets {ends}"
            for record in consumer.consume(10_000, 0.5):
                partition, offset = record.partition(), record.offset()
                if record.error():
                    if record.error().code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(record.error())
                    position[partition] = max(position[partition], offset)
                    continue
                position[partition] = offset + 1
                if offset < ends[partition]:
                    messages.append(received(partition, record.key(), record.value(), record.headers(),
                                             record.timestamp()[1]))
        return messages
    finally:
        consumer.close()


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def topic_configs(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource("topic", topic)
    return admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)


def partition_count(admin: AdminClient, topic: str) -> int:
    metadata = admin.list_topics(topic=topic, timeout=ADMIN_TIMEOUT_S).topics[topic]
    assert metadata.error is None, metadata.error
    return len(metadata.partitions)


def admin_error_code(future) -> int:
    with pytest.raises(KafkaException) as error:
        future.result(ADMIN_TIMEOUT_S)
    return error.value.args[0].code()


def list_offsets(admin: AdminClient, topic: str, spec: OffsetSpec, partition: int = 0):
    request = {TopicPartition(topic, partition): spec}
    [(_tp, future)] = admin.list_offsets(request, request_timeout=ADMIN_TIMEOUT_S).items()
    return future.result(ADMIN_TIMEOUT_S)

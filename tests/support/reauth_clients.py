"""Real clients kept busy over several SASL session lifetimes (KIP-368
tests): a producer and a consumer of one topic for a while, then drained,
with the client's own log lines caught to count its re-authentications."""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from confluent_kafka import Consumer, Producer

DRAIN_TIMEOUT_S = 20.0


class LogLines(logging.Handler):
    """The messages a logger emits, kept for the test to read."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def caught(logger: logging.Logger) -> Iterator[LogLines]:
    """The lines ``logger`` emits at DEBUG and above inside the block."""
    lines, previous_level = LogLines(), logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(previous_level)


def confluent_round_trip(config: dict, topic: str, seconds: float) -> tuple[int, list[bytes]]:
    """librdkafka produces ``value-<n>`` and consumes for ``seconds``, then
    drains: (messages sent, values received). Every delivery must succeed."""
    producer = Producer(config)
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    sent, received, failures = 0, [], []

    def take(timeout: float) -> None:
        message = consumer.poll(timeout)
        if message is not None and message.error() is None:
            received.append(message.value())
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            producer.produce(topic, b"value-%d" % sent,
                             on_delivery=lambda err, _msg: failures.append(err) if err else None)
            sent += 1
            producer.poll(0)
            take(0.05)
        assert producer.flush(15) == 0 and not failures, failures
        drain_deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while len(received) < sent and time.monotonic() < drain_deadline:
            take(0.2)
    finally:
        consumer.close()
    return sent, received


def kafka_python_round_trip(config: dict, topic: str, seconds: float) -> tuple[int, list[bytes]]:
    """The same with kafka-python's producer and consumer."""
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**config)
    consumer = KafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest", **config)
    sent, received = 0, []

    def take(timeout_ms: int) -> None:
        for records in consumer.poll(timeout_ms=timeout_ms).values():
            received.extend(record.value for record in records)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            producer.send(topic, b"value-%d" % sent)
            sent += 1
            take(50)
        producer.flush(timeout=15)
        drain_deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while len(received) < sent and time.monotonic() < drain_deadline:
            take(200)
    finally:
        consumer.close()
        producer.close()
    return sent, received

"""One record through a broker and back with confluent-kafka (librdkafka).

Self-contained on purpose (confluent-kafka and the standard library only):
tests/integration/test_testing_plugin.py copies this file into the
throw-away project its inner pytest run tests, as a user's own module.
"""
import time

from confluent_kafka import Consumer, Producer, TopicPartition

ROUND_TRIP_TIMEOUT_S = 30.0


def round_trip(bootstrap_servers: str, topic: str, value: bytes) -> bytes:
    """Produce ``value`` to partition 0 of ``topic`` (acks=all), read
    partition 0 from its start and return the first record's value."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all"})
    producer.produce(topic, value=value, partition=0)
    assert producer.flush(ROUND_TRIP_TIMEOUT_S) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "round-trip",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + ROUND_TRIP_TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message.value()
    finally:
        consumer.close()
    raise AssertionError(f"nothing read back from {topic} within {ROUND_TRIP_TIMEOUT_S:g} s")

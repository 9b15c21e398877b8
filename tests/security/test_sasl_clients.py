"""Real clients against SASL_PLAINTEXT and SASL_SSL listeners: the right
password produces and consumes, a wrong one is refused with
SASL_AUTHENTICATION_FAILED, for PLAIN (users of the JAAS property) and both
SCRAMs (a user added with `kcore users add`)."""
from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.support.compat import unique_topic
from tests.support.secure_broker import SCRAM_PASSWORD, SCRAM_USER, USERS
from tests.support.security_clients import (
    COUNT,
    aiokafka_config,
    confluent_config,
    kafka_python_config,
    produce_and_consume,
)

SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def user_of(mechanism: str) -> tuple[str, str]:
    return ("alice", USERS["alice"]) if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_right_password_produces_and_consumes(secure_broker, listener, mechanism):
    topic = unique_topic(f"sasl-{mechanism.lower()}")
    config = confluent_config(secure_broker, listener, mechanism, *user_of(mechanism))
    assert produce_and_consume(config, topic) == [b"value-%d" % i for i in range(COUNT)]


def authentication_errors(config: dict) -> list:
    """The errors librdkafka reports while it tries to connect (bounded)."""
    errors: list = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not any(
            e.code() == KafkaError._AUTHENTICATION for e in errors):
        producer.poll(0.2)
    return [e.code() for e in errors]


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_wrong_password_is_refused(secure_broker, listener, mechanism):
    user, _ = user_of(mechanism)
    config = confluent_config(secure_broker, listener, mechanism, user, "wrong")
    assert KafkaError._AUTHENTICATION in authentication_errors(config)
    with pytest.raises(KafkaException):
        AdminClient(config).list_topics(timeout=3)


def test_confluent_unknown_user_is_refused(secure_broker):
    config = confluent_config(secure_broker, "SASL_SSL", "SCRAM-SHA-256", "nobody", "x")
    assert KafkaError._AUTHENTICATION in authentication_errors(config)


@pytest.mark.parametrize("listener, mechanism", [("SASL_PLAINTEXT", "PLAIN"),
                                                 ("SASL_SSL", "SCRAM-SHA-512"),
                                                 ("SASL_PLAINTEXT", "SCRAM-SHA-256")])
def test_kafka_python_right_and_wrong_password(secure_broker, listener, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    user, password = user_of(mechanism)
    topic = unique_topic("kafka-python-sasl")
    producer = KafkaProducer(**kafka_python_config(secure_broker, listener, mechanism, user, password))
    try:
        producer.send(topic, b"hello").get(timeout=20)
    finally:
        producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest",
                             **kafka_python_config(secure_broker, listener, mechanism, user, password))
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(record.value for record in records)
    finally:
        consumer.close()
    assert values == [b"hello"]
    refusals = secure_broker.process.log_path.read_text().count("authentication failed")
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**kafka_python_config(secure_broker, listener, mechanism, user, "wrong"),
                      bootstrap_timeout_ms=3000).close()
    # kafka-python reports the closed connection that follows the broker's
    # SASL_AUTHENTICATION_FAILED answer; the broker says why it refused.
    assert secure_broker.process.log_path.read_text().count("authentication failed") > refusals


@pytest.mark.parametrize("listener, mechanism", [("SASL_SSL", "PLAIN"),
                                                 ("SASL_PLAINTEXT", "SCRAM-SHA-512")])
def test_aiokafka_right_and_wrong_password(secure_broker, listener, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError as AioKafkaError

    user, password = user_of(mechanism)
    topic = unique_topic("aiokafka-sasl")

    async def right() -> bytes:
        producer = AIOKafkaProducer(**aiokafka_config(secure_broker, listener, mechanism, user, password))
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"hello")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest",
                                    **aiokafka_config(secure_broker, listener, mechanism, user, password))
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 20)
        finally:
            await consumer.stop()
        return record.value

    async def wrong() -> None:
        producer = AIOKafkaProducer(**aiokafka_config(secure_broker, listener, mechanism, user, "wrong"))
        try:
            await asyncio.wait_for(producer.start(), 20)
        finally:
            await producer.stop()

    assert asyncio.run(right()) == b"hello"
    with pytest.raises(AioKafkaError):
        asyncio.run(wrong())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_lists_metadata_only_with_the_right_password(secure_broker, mechanism):
    user, password = user_of(mechanism)

    def kcat(secret: str, wait_s: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["kcat", "-b", secure_broker.address("SASL_SSL"), "-L", "-m", str(wait_s),
             "-X", "security.protocol=SASL_SSL", "-X", f"sasl.mechanisms={mechanism}",
             "-X", f"sasl.username={user}", "-X", f"sasl.password={secret}",
             "-X", f"ssl.ca.location={secure_broker.pki.ca_file}"],
            capture_output=True, text=True, timeout=30)

    listed = kcat(password, 10)
    assert listed.returncode == 0, listed.stderr
    assert f"127.0.0.1:{secure_broker.ports['SASL_SSL']}" in listed.stdout  # the SASL_SSL endpoint
    refused = kcat("wrong", 3)
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr or "SASL authentication error" in refused.stderr

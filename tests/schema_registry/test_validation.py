"""Validation on produce (Confluent Server's ``confluent.value.schema.
validation``, Redpanda's ``redpanda.value.schema.id.validation``): a batch
holding a record whose value does not carry a schema id registered under
the topic's subject is refused whole with INVALID_RECORD naming that record
(KIP-467: librdkafka fails it with INVALID_RECORD and the rest of the batch
with _INVALID_DIFFERENT_RECORD; kafka-python shows the broker's reason);
batches whose records all carry one are accepted."""
from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from confluent_kafka.error import KafkaError
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kafka import KafkaProducer

from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.confluent import consume as consume_confluent

SCHEMA = json.dumps({"type": "record", "name": "Payment", "namespace": "validation",
                     "fields": [{"name": "amount", "type": "long"}]})
BATCH = 50
BAD = frozenset({7, 23, 41})
LINGER_MS = 1000


def create_topic(registry, topic: str, configs: dict[str, str]) -> None:
    admin = admin_client(registry.broker.bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(ADMIN_TIMEOUT_S)


def payloads(registry, topic: str, bad: frozenset[int], bad_value=lambda i: b"not framed %d" % i) -> list[bytes]:
    serialize = AvroSerializer(registry.client(), SCHEMA)
    context = SerializationContext(topic, MessageField.VALUE)
    return [bad_value(i) if i in bad else serialize({"amount": i}, context) for i in range(BATCH)]


def produce_batch(bootstrap: str, topic: str, values: list[bytes],
                  partition: int = 0) -> dict[int, KafkaError | None]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS})
    # The leader known before the first record, so the records queue in one
    # batch rather than one sent as the metadata answer arrives and the rest.
    producer.list_topics(topic, timeout=10)
    reports: dict[int, KafkaError | None] = {}
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=partition,
                         on_delivery=lambda error, _message, i=index: reports.__setitem__(i, error))
    assert producer.flush(30) == 0
    return reports


@pytest.mark.parametrize("switch", ["confluent.value.schema.validation", "redpanda.value.schema.id.validation"])
def test_a_batch_with_unregistered_records_is_refused_naming_them(registry, subject, switch):
    topic = subject.removesuffix("-value")
    create_topic(registry, topic, {switch: "true"})
    reports = produce_batch(registry.broker.bootstrap, topic, payloads(registry, topic, BAD))
    named = {i for i, error in reports.items() if error and error.code() == KafkaError.INVALID_RECORD}
    others = {i for i, error in reports.items() if error and error.code() == KafkaError._INVALID_DIFFERENT_RECORD}
    accepted = {i for i, error in reports.items() if error is None}
    # The batch holding the bad records is refused whole; on a loaded machine
    # librdkafka may still have sent a few records in a batch of their own.
    assert named == BAD and others | accepted == set(range(BATCH)) - BAD
    assert len(others) >= BATCH // 2

    good = produce_batch(registry.broker.bootstrap, topic, payloads(registry, topic, frozenset()))
    assert not any(good.values())
    stored = consume_confluent(registry.broker.bootstrap, topic, BATCH, partitions=[0])
    assert len(stored) == BATCH and all(message.value[0] == 0 for message in stored)


def test_an_id_registered_under_another_subject_is_refused(registry, subject):
    topic = subject.removesuffix("-value")
    create_topic(registry, topic, {"confluent.value.schema.validation": "true"})
    foreign = AvroSerializer(registry.client(), json.dumps({"type": "record", "name": "Elsewhere",
                                                            "fields": [{"name": "x", "type": "int"}]}))
    foreign_value = foreign({"x": 1}, SerializationContext(f"other-{topic}", MessageField.VALUE))
    unknown = b"\x00" + struct.pack(">i", 987654) + b"\x02"
    values = payloads(registry, topic, frozenset({3, 4}),
                      lambda i: foreign_value if i == 3 else unknown)
    reports = produce_batch(registry.broker.bootstrap, topic, values)
    assert {i for i, error in reports.items() if error and error.code() == KafkaError.INVALID_RECORD} == {3, 4}


def test_kafka_python_shows_the_reason_per_record(registry, subject):
    topic = subject.removesuffix("-value")
    create_topic(registry, topic, {"confluent.value.schema.validation": "true"})
    values = payloads(registry, topic, frozenset({5}))
    producer = KafkaProducer(bootstrap_servers=registry.broker.bootstrap, linger_ms=LINGER_MS)
    try:
        futures = [producer.send(topic, value, partition=0) for value in values]
        producer.flush(30)
    finally:
        producer.close(timeout=10)
    reasons = {index: str(future.exception) for index, future in enumerate(futures) if future.exception}
    assert set(reasons) == set(range(BATCH))
    assert "magic byte 0" in reasons[5] and "InvalidRecord" in reasons[5]


def test_keys_tombstones_and_turning_validation_off(registry, subject):
    topic = subject.removesuffix("-value")
    create_topic(registry, topic, {"confluent.key.schema.validation": "true", "cleanup.policy": "compact"})
    key_serializer = AvroSerializer(registry.client(), SCHEMA)
    key = key_serializer({"amount": 1}, SerializationContext(topic, MessageField.KEY))
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap})
    reports: list = []
    for value, record_key in ((b"any value", key), (None, key), (b"v", b"raw key")):  # one batch each
        producer.produce(topic, value, record_key, partition=0, on_delivery=lambda e, m: reports.append(e))
        producer.flush(30)
    assert reports[0] is None and reports[1] is None
    assert reports[2] is not None and reports[2].code() == KafkaError.INVALID_RECORD

    admin = admin_client(registry.broker.bootstrap)
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("confluent.key.schema.validation", "false",
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    again: list = []
    producer.produce(topic, b"v", b"raw key", partition=0, on_delivery=lambda e, m: again.append(e))
    producer.flush(30)
    assert again == [None]


def test_record_name_strategy(registry, subject):
    topic = subject.removesuffix("-value")
    create_topic(registry, topic, {"confluent.value.schema.validation": "true",
                                   "confluent.value.subject.name.strategy":
                                       "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    from confluent_kafka.schema_registry import record_subject_name_strategy
    serialize = AvroSerializer(registry.client(), SCHEMA, conf={"subject.name.strategy": record_subject_name_strategy})
    good = serialize({"amount": 3}, SerializationContext(topic, MessageField.VALUE))
    topic_named = AvroSerializer(registry.client(), json.dumps({"type": "record", "name": "Other",
                                                                "fields": [{"name": "y", "type": "int"}]}))
    bad = topic_named({"y": 1}, SerializationContext(topic, MessageField.VALUE))  # under <topic>-value
    # Two bad records: librdkafka fails a whole batch with INVALID_RECORD when
    # the broker names only one record, and tells them apart from two on.
    reports = produce_batch(registry.broker.bootstrap, topic, [good, bad, bad, good])
    assert [reports[i].code() for i in range(4)] == [KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD,
                                                     KafkaError.INVALID_RECORD, KafkaError._INVALID_DIFFERENT_RECORD]
    assert not any(produce_batch(registry.broker.bootstrap, topic, [good, good]).values())


def test_bad_strategy_is_invalid_config(registry, subject):
    admin = admin_client(registry.broker.bootstrap)
    topic = subject.removesuffix("-value")
    future = admin.create_topics([NewTopic(topic, 1, 1, config={
        "confluent.value.subject.name.strategy": "MyStrategy"})])[topic]
    with pytest.raises(Exception, match="INVALID_CONFIG|MyStrategy"):
        future.result(ADMIN_TIMEOUT_S)

"""ACLs enforced against real clients (confluent-kafka, kafka-python,
aiokafka, kcat) on a broker process with the authorizer on. Every client
is User:ANONYMOUS here (no authentication yet), so the ACLs name it."""
from __future__ import annotations

import asyncio
import subprocess

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import (
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import TopicAuthorizationFailedError

from tests.support.acls import (
    ADMIN_TIMEOUT_S,
    ANONYMOUS,
    admin_for,
    consume_error_or_message,
    grant,
    produce_one,
    secured_broker,
)

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
Op = AclOperation


def test_produce_without_an_acl_is_refused_and_an_acl_allows_it(broker_factory):
    broker = secured_broker(broker_factory, ["orders"])
    error = produce_one(broker.bootstrap, "orders")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin_for(broker), TOPIC, "orders", Op.WRITE)
    assert produce_one(broker.bootstrap, "orders") is None


def test_prefixed_acl_covers_topics_by_name_prefix(broker_factory):
    broker = secured_broker(broker_factory, ["orders-eu", "orders-us", "payments"])
    grant(admin_for(broker), TOPIC, "orders-", Op.WRITE, pattern=ResourcePatternType.PREFIXED)
    assert produce_one(broker.bootstrap, "orders-eu") is None
    assert produce_one(broker.bootstrap, "orders-us") is None
    error = produce_one(broker.bootstrap, "payments")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_wins_over_allow(broker_factory):
    broker = secured_broker(broker_factory, ["audit"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "audit", Op.ALL)
    assert produce_one(broker.bootstrap, "audit") is None
    grant(admin, TOPIC, "audit", Op.WRITE, permission=AclPermissionType.DENY)
    error = produce_one(broker.bootstrap, "audit")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # DESCRIBE (from ALL) still holds: the topic stays visible
    assert "audit" in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics


def test_acl_host_must_match_the_clients_address(broker_factory):
    broker = secured_broker(broker_factory, ["hosts"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "hosts", Op.WRITE, host="10.0.0.1")
    error = produce_one(broker.bootstrap, "hosts")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin, TOPIC, "hosts", Op.WRITE, host="127.0.0.1")
    assert produce_one(broker.bootstrap, "hosts") is None


def test_metadata_lists_only_describable_topics(broker_factory):
    broker = secured_broker(broker_factory, ["visible", "read-only", "hidden"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "visible", Op.DESCRIBE)
    grant(admin, TOPIC, "read-only", Op.READ)  # READ implies DESCRIBE
    listed = set(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics)
    assert {"visible", "read-only"} <= listed and "hidden" not in listed
    asked = admin.list_topics(topic="hidden", timeout=ADMIN_TIMEOUT_S).topics["hidden"]
    assert asked.error is not None and asked.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    kcat = subprocess.run(["kcat", "-b", broker.bootstrap, "-L", "-J"], capture_output=True,
                          text=True, timeout=30)
    assert kcat.returncode == 0 and '"visible"' in kcat.stdout and '"hidden"' not in kcat.stdout


def test_a_consumer_group_needs_read_on_the_group(broker_factory):
    broker = secured_broker(broker_factory, ["events"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "events", Op.ALL)
    assert produce_one(broker.bootstrap, "events") is None
    error = consume_error_or_message(broker.bootstrap, "events", "readers")
    assert isinstance(error, KafkaError) and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(admin, GROUP, "readers", Op.READ)
    record = consume_error_or_message(broker.bootstrap, "events", "readers")
    assert not isinstance(record, KafkaError) and record.value() == b"value"


def test_create_topics_needs_create(broker_factory):
    broker = secured_broker(broker_factory, [])
    admin = admin_for(broker)
    [future] = admin.create_topics([NewTopic("fresh", 1, 1)]).values()
    with pytest.raises(Exception) as refused:
        future.result(ADMIN_TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin, TOPIC, "fresh", Op.CREATE)
    [future] = admin.create_topics([NewTopic("fresh", 1, 1)]).values()
    assert future.result(ADMIN_TIMEOUT_S) is None


def test_allow_everyone_if_no_acl_found(broker_factory):
    broker = secured_broker(broker_factory, ["open", "guarded"],
                            **{"allow.everyone.if.no.acl.found": "true"})
    # an ACL for someone else covers "guarded": no longer "no ACL found"
    grant(admin_for(broker), TOPIC, "guarded", Op.WRITE, principal="User:alice")
    assert produce_one(broker.bootstrap, "open") is None
    error = produce_one(broker.bootstrap, "guarded")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_super_users_ignore_deny_acls(broker_factory):
    broker = secured_broker(broker_factory, ["t"])
    grant(admin_for(broker), TOPIC, "t", Op.ALL, permission=AclPermissionType.DENY)
    assert produce_one(broker.bootstrap, "t") is not None
    broker.overrides["super.users"] = f"User:admin;{ANONYMOUS}"
    broker.restart()
    assert produce_one(broker.bootstrap, "t") is None


def test_kafka_python_producer_sees_topic_authorization_failed(broker_factory):
    broker = secured_broker(broker_factory, ["kp"])
    grant(admin_for(broker), TOPIC, "kp", Op.DESCRIBE)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0,
                             request_timeout_ms=10000, max_block_ms=10000)
    try:
        future = producer.send("kp", b"value")
        with pytest.raises(TopicAuthorizationFailedError):
            future.get(timeout=15)
    finally:
        producer.close(timeout=5)
    grant(admin_for(broker), TOPIC, "kp", Op.WRITE)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        assert producer.send("kp", b"value").get(timeout=15).offset == 0
    finally:
        producer.close(timeout=5)


def test_aiokafka_consumer_cannot_read_without_read(broker_factory):
    broker = secured_broker(broker_factory, ["aio"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "aio", Op.WRITE)
    assert produce_one(broker.bootstrap, "aio") is None

    async def first_fetch():
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            from aiokafka import TopicPartition
            consumer.assign([TopicPartition("aio", 0)])
            async with asyncio.timeout(20):
                batches = await consumer.getmany(timeout_ms=10000)
                return [m.value for records in batches.values() for m in records]
        finally:
            await consumer.stop()

    with pytest.raises(AioTopicAuthorizationFailed):
        asyncio.run(first_fetch())
    grant(admin, TOPIC, "aio", Op.READ)
    assert asyncio.run(first_fetch()) == [b"value"]


def test_delete_records_needs_delete_on_the_topic(broker_factory):
    broker = secured_broker(broker_factory, ["trimmed"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "trimmed", Op.WRITE)  # WRITE implies DESCRIBE: the topic is visible
    for _ in range(3):
        assert produce_one(broker.bootstrap, "trimmed") is None
    refused = admin.delete_records([TopicPartition("trimmed", 0, 2)])
    with pytest.raises(Exception) as raised:
        next(iter(refused.values())).result(ADMIN_TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    kafka_python = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(TopicAuthorizationFailedError):  # the broker's answer, sent as it is
            kafka_python.delete_records({KafkaPythonTopicPartition("trimmed", 0): 2}, partition_leader_id=0)
    finally:
        kafka_python.close()
    grant(admin, TOPIC, "trimmed", Op.DELETE)
    deleted = admin.delete_records([TopicPartition("trimmed", 0, 2)])
    assert next(iter(deleted.values())).result(ADMIN_TIMEOUT_S).low_watermark == 2

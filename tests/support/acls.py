"""Brokers with the ACL authorizer on, and ACLs through confluent-kafka's
AdminClient (librdkafka's CreateAcls / DescribeAcls / DeleteAcls).

Until clients authenticate, every client is User:ANONYMOUS. A secured
broker starts as Kafka operators bootstrap one: first with ANONYMOUS a
super user, which creates the topics and grants ANONYMOUS ALTER on the
cluster (so it may manage ACLs and nothing else), then restarted without
super users: what the test then grants is all ANONYMOUS may do.
"""
from __future__ import annotations

import subprocess
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.support import BrokerProcess
from tests.support.cli import kcore_cli

ANONYMOUS = "User:ANONYMOUS"
ADMIN_TIMEOUT_S = 15.0
SECURED = {"authorizer.class.name": "kcore", "num.partitions": "1",
           "auto.create.topics.enable": "false"}


def secured_broker(broker_factory, topics: list[str], **overrides: str) -> BrokerProcess:
    broker = broker_factory({**SECURED, "super.users": ANONYMOUS, **overrides})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    if topics:
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
            future.result(ADMIN_TIMEOUT_S)
    grant(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER)
    del broker.overrides["super.users"]
    return broker.restart()


def admin_for(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def binding(kind, name: str, operation, permission=AclPermissionType.ALLOW,
            pattern=ResourcePatternType.LITERAL, principal: str = ANONYMOUS,
            host: str = "*") -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, operation, permission)


def grant(admin: AdminClient, kind, name: str, operation, **kwargs) -> AclBinding:
    acl = binding(kind, name, operation, **kwargs)
    for future in admin.create_acls([acl]).values():
        future.result(ADMIN_TIMEOUT_S)
    return acl


def every_acl(admin: AdminClient) -> set[AclBinding]:
    match_all = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                 AclOperation.ANY, AclPermissionType.ANY)
    return set(admin.describe_acls(match_all).result(ADMIN_TIMEOUT_S))


def produce_one(bootstrap: str, topic: str, **config) -> KafkaError | None:
    """The delivery report's error of one message (None: delivered)."""
    reports: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000,
                         "retries": 0, **config})
    producer.produce(topic, b"value", on_delivery=lambda error, _msg: reports.append(error))
    remaining = producer.flush(15)
    assert remaining == 0 and len(reports) == 1, "no delivery report within 15 s"
    return reports[0]


def consume_error_or_message(bootstrap: str, topic: str, group: str, timeout_s: float = 20.0):
    """Subscribe in a group and poll until a message or an error comes."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            record = consumer.poll(0.5)
            if record is None:
                continue
            return record.error() or record
        raise AssertionError(f"nothing from {topic} in {timeout_s:g} s")
    finally:
        consumer.close()


def kcore_quotas(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess:
    """`kcore quotas ARGS` against ``broker``."""
    return kcore_cli("quotas", *args, "--bootstrap-server", broker.bootstrap)

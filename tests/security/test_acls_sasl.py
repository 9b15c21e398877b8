"""ACLs and quotas with real users: a broker with a PLAINTEXT and a
SASL_PLAINTEXT listener, PLAIN users admin (a super user), alice and bob,
clients confluent-kafka and kafka-python logging in as them; and a
two-broker cluster whose brokers log in to each other as User:broker."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from tests.support import BrokerProcess, free_port
from tests.support.acls import ADMIN_TIMEOUT_S, kcore_quotas
from tests.support.cli import kcore_cli
from tests.support.cluster import Cluster

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
             "broker": "broker-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{name}="{password}"' for name, password in PASSWORDS.items()) + ";")
ALICE, BOB = "User:alice", "User:bob"
Op = AclOperation


def sasl_settings(plain_port: int, sasl_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
        "authorizer.class.name": "kcore", "super.users": "User:admin",
        "num.partitions": "1", "auto.create.topics.enable": "false", "http.listeners": "",
        "group.initial.rebalance.delay.ms": "0",
    }


class SaslBroker:
    def __init__(self, directory, extra: dict[str, str] | None = None):
        self.plain_port, self.sasl_port = free_port(), free_port()
        self.process = BrokerProcess(directory, {**sasl_settings(self.plain_port, self.sasl_port),
                                                 **(extra or {})}, port=self.plain_port)

    def config(self, user: str | None) -> dict:
        if user is None:
            return {"bootstrap.servers": f"127.0.0.1:{self.plain_port}"}
        return {"bootstrap.servers": f"127.0.0.1:{self.sasl_port}",
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": PASSWORDS[user]}


@pytest.fixture
def sasl_broker(tmp_path):
    broker = SaslBroker(tmp_path / "data")
    broker.process.start()
    admin = AdminClient(broker.config("admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("ledger", "shared")]).values():
        future.result(ADMIN_TIMEOUT_S)
    yield broker
    broker.process.kill()


def allow(admin: AdminClient, principal: str, kind, name: str, op,
          permission=AclPermissionType.ALLOW,
          pattern=ResourcePatternType.LITERAL) -> None:
    acl = AclBinding(kind, name, pattern, principal, "*", op, permission)
    for future in admin.create_acls([acl]).values():
        future.result(ADMIN_TIMEOUT_S)


def produce_as(broker: SaslBroker, user: str | None, topic: str) -> KafkaError | None:
    """The delivery error of one record (None: delivered). librdkafka
    refuses the record in produce() itself when the metadata it already has
    names the topic's error (its partitioner returns the topic's error), in
    the delivery report otherwise: which one depends on timing."""
    reports: list = []
    producer = Producer({**broker.config(user), "message.timeout.ms": 10000, "retries": 0})
    try:
        producer.produce(topic, f"from {user}".encode(), on_delivery=lambda e, _m: reports.append(e))
    except KafkaException as exc:
        return exc.args[0]
    assert producer.flush(15) == 0 and len(reports) == 1
    return reports[0]


def first_record_as(broker: SaslBroker, user: str, topic: str, group: str):
    consumer = Consumer({**broker.config(user), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            record = consumer.poll(0.5)
            if record is not None:
                return record.error() or record
        raise AssertionError(f"nothing for {user} from {topic} in 20 s")
    finally:
        consumer.close()


def test_alice_is_allowed_and_bob_is_denied(sasl_broker):
    admin = AdminClient(sasl_broker.config("admin"))
    allow(admin, ALICE, ResourceType.TOPIC, "ledger", Op.WRITE)
    allow(admin, ALICE, ResourceType.TOPIC, "ledger", Op.READ)
    allow(admin, ALICE, ResourceType.GROUP, "auditors", Op.READ)
    assert produce_as(sasl_broker, "alice", "ledger") is None
    refused = produce_as(sasl_broker, "bob", "ledger")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    anonymous = produce_as(sasl_broker, None, "ledger")
    assert anonymous is not None and anonymous.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    record = first_record_as(sasl_broker, "alice", "ledger", "auditors")
    assert not isinstance(record, KafkaError) and record.value() == b"from alice"
    denied = first_record_as(sasl_broker, "bob", "ledger", "auditors")
    assert isinstance(denied, KafkaError)
    assert denied.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                             KafkaError.TOPIC_AUTHORIZATION_FAILED)
    # bob sees neither topic; alice sees hers
    assert "ledger" not in AdminClient(sasl_broker.config("bob")).list_topics(
        timeout=ADMIN_TIMEOUT_S).topics
    assert "ledger" in AdminClient(sasl_broker.config("alice")).list_topics(
        timeout=ADMIN_TIMEOUT_S).topics


def test_a_deny_for_bob_beats_an_allow_for_every_user(sasl_broker):
    admin = AdminClient(sasl_broker.config("admin"))
    allow(admin, "User:*", ResourceType.TOPIC, "shared", Op.WRITE)
    allow(admin, BOB, ResourceType.TOPIC, "shared", Op.WRITE, permission=AclPermissionType.DENY)
    assert produce_as(sasl_broker, "alice", "shared") is None
    refused = produce_as(sasl_broker, "bob", "shared")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_an_idempotent_producer_needs_write_on_a_prefix_not_on_an_existing_topic(sasl_broker):
    """KIP-679: InitProducerId without a transactional id is allowed with
    WRITE on any topic pattern, though no topic it covers exists yet."""
    admin = AdminClient(sasl_broker.config("admin"))
    allow(admin, BOB, ResourceType.TOPIC, "bob-events-", Op.WRITE, pattern=ResourcePatternType.PREFIXED)
    reports: list = []
    producer = Producer({**sasl_broker.config("bob"), "enable.idempotence": True,
                         "message.timeout.ms": 15000})
    producer.produce("bob-events-1", b"once", on_delivery=lambda e, _m: reports.append(e))
    producer.poll(1.0)  # the producer id is asked for now, before the topic exists
    assert reports == []  # not refused (a fatal error would fail the message at once)
    admin.create_topics([NewTopic("bob-events-1", 1, 1)])["bob-events-1"].result(ADMIN_TIMEOUT_S)
    assert producer.flush(20) == 0 and reports == [None]


def test_only_a_super_user_or_a_granted_user_manages_acls(sasl_broker):
    bob_admin = AdminClient(sasl_broker.config("bob"))
    acl = AclBinding(ResourceType.TOPIC, "ledger", ResourcePatternType.LITERAL, BOB, "*",
                     Op.ALL, AclPermissionType.ALLOW)
    [future] = bob_admin.create_acls([acl]).values()
    with pytest.raises(Exception) as refused:
        future.result(ADMIN_TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    allow(AdminClient(sasl_broker.config("admin")), BOB, ResourceType.BROKER, "kafka-cluster",
          Op.ALTER)
    [future] = bob_admin.create_acls([acl]).values()
    assert future.result(ADMIN_TIMEOUT_S) is None
    assert produce_as(sasl_broker, "bob", "ledger") is None


def test_kafka_python_as_bob_gets_topic_authorization_failed(sasl_broker):
    allow(AdminClient(sasl_broker.config("admin")), BOB, ResourceType.TOPIC, "ledger",
          Op.DESCRIBE)
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{sasl_broker.sasl_port}",
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="bob", sasl_plain_password=PASSWORDS["bob"],
                             retries=0, request_timeout_ms=10000, max_block_ms=10000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("ledger", b"from bob").get(timeout=15)
    finally:
        producer.close(timeout=5)


def produce_rate_as(broker: SaslBroker, user: str, topic: str, seconds: float) -> float:
    acked = 0

    def delivered(error, message) -> None:
        nonlocal acked
        if error is None:
            acked += len(message.value())

    producer = Producer({**broker.config(user), "linger.ms": 5, "batch.size": 16 * 1024,
                         "queue.buffering.max.kbytes": 1024,
                         "max.in.flight.requests.per.connection": 5})
    value = b"x" * 10_000
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    rate = acked / (time.monotonic() - started)
    producer.flush(30)
    return rate


def test_a_user_quota_slows_alice_and_not_bob(sasl_broker, tmp_path):
    admin = AdminClient(sasl_broker.config("admin"))
    for user in (ALICE, BOB):
        allow(admin, user, ResourceType.TOPIC, "shared", Op.WRITE)
    quota = 512 * 1024
    anonymous = kcore_quotas(sasl_broker.process, "alter", "--entity-type", "users",
                             "--entity-name", "alice", "--add-config",
                             f"producer_byte_rate={quota}")
    assert anonymous.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in anonymous.stderr
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.username=admin\nsasl.password=admin-secret\n")
    set_quota = kcore_cli("quotas", "alter", "--entity-type", "users", "--entity-name", "alice",
                          "--add-config", f"producer_byte_rate={quota}",
                          "--bootstrap-server", f"127.0.0.1:{sasl_broker.sasl_port}",
                          "--command-config", str(config))
    assert set_quota.returncode == 0, set_quota.stderr
    alice = produce_rate_as(sasl_broker, "alice", "shared", 4.0)
    bob = produce_rate_as(sasl_broker, "bob", "shared", 2.0)
    assert 0.9 * quota <= alice <= 1.1 * quota, f"alice at {alice / quota:.2f} x her quota"
    assert bob > 3 * quota, f"bob at {bob / quota:.2f} x alice's quota"


def produce_one_as(config: dict, topic: str, partition: int):
    reports: list = []
    producer = Producer({**config, "acks": "all", "retries": 0, "message.timeout.ms": 5000})
    producer.produce(topic, b"first", partition=partition,
                     on_delivery=lambda error, _m: reports.append(error))
    producer.flush(10)
    return reports[0] if reports else "no report"


def eventually(condition, what: str, timeout_s: float = 30.0) -> None:
    """Poll ``condition`` (a client error counts as not yet) until true."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():
                return
        except KafkaException:
            pass
        assert time.monotonic() < deadline, f"not within {timeout_s:g} s: {what}"
        time.sleep(0.2)


def test_a_cluster_whose_brokers_log_in_enforces_acls(tmp_path, zookeeper):
    """Brokers reach each other on the SASL listener as User:broker, the
    super user: replication works with the authorizer on, and ACLs decide
    for every client, PLAINTEXT ones included."""
    ports = {broker_id: (free_port(), free_port()) for broker_id in (1, 2)}
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 2, {
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            JAAS[:-1] + ' username="broker" password="broker-secret";',
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "authorizer.class.name": "kcore", "super.users": "User:admin;User:broker",
        "offsets.topic.replication.factor": "2", "http.listeners": ""})
    for broker_id, broker in cluster.brokers.items():
        plain, sasl = ports[broker_id]
        broker.port = plain
        broker.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{plain},"
                                         f"SASL_PLAINTEXT://127.0.0.1:{sasl}")
    try:
        for broker in cluster.brokers.values():
            broker.start()
        sasl_bootstrap = ",".join(f"127.0.0.1:{sasl}" for _, sasl in ports.values())

        def as_user(user: str) -> dict:
            return {"bootstrap.servers": sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN", "sasl.username": user,
                    "sasl.password": PASSWORDS[user]}

        admin = AdminClient(as_user("admin"))
        eventually(lambda: len(admin.list_topics(timeout=5).brokers) == 2,
                   "both brokers registered")
        [future] = admin.create_topics([NewTopic("replicated", 2, 2)]).values()
        future.result(ADMIN_TIMEOUT_S)
        allow(admin, ALICE, ResourceType.TOPIC, "replicated", Op.WRITE)
        def in_sync() -> bool:
            topic = admin.list_topics(topic="replicated", timeout=ADMIN_TIMEOUT_S).topics["replicated"]
            return len(topic.partitions) == 2 and all(len(p.isrs) == 2
                                                      for p in topic.partitions.values())

        eventually(in_sync, "replicas in sync over the SASL listener")
        # every broker learns the ACL from ZooKeeper (a watch), not at once:
        # alice's first write is retried until the leaders know it
        for partition in (0, 1):  # each has its own leader
            eventually(lambda p=partition: produce_one_as(as_user("alice"), "replicated", p) is None,
                       f"alice's first write to partition {partition} accepted")
        reports: list = []

        def delivered(error, _message) -> None:
            reports.append(None if error is None else error.code())

        producer = Producer({**as_user("alice"), "acks": "all", "message.timeout.ms": 15000})
        for index in range(20):
            producer.produce("replicated", str(index).encode(), on_delivery=delivered)
        remaining = producer.flush(20)
        assert remaining == 0
        assert reports == [None] * 20
        anonymous: list = []
        plain = Producer({"bootstrap.servers": cluster.bootstrap, "retries": 0,
                          "message.timeout.ms": 10000})
        plain.produce("replicated", b"anonymous", on_delivery=lambda e, _m: anonymous.append(e))
        assert plain.flush(15) == 0
        assert anonymous[0] is not None
        assert anonymous[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        cluster.kill_all()

"""A two-broker ZooKeeper cluster whose brokers talk to each other over
SASL_SSL (PLAIN, the broker's own login from the listener's JAAS config):
followers replicate, acks=all completes, and clients on the PLAINTEXT
listener are told the PLAINTEXT endpoints of both brokers. SCRAM users
live in ZooKeeper's /config/users: added through one broker, they log in
on the other. With connections.max.reauth.ms the brokers re-authenticate
their connections to each other."""
from __future__ import annotations

import contextlib
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing.zookeeper import ZooKeeperServer
from tests.support import BrokerProcess, free_port
from tests.support.cli import kcore_cli
from tests.support.cluster import CLUSTER_SETTINGS
from tests.support.compat import unique_topic
from tests.support.secure_broker import PLAIN_JAAS, SecureBroker
from tests.support.security_clients import confluent_config, produce_and_consume

BROKER_JAAS = PLAIN_JAAS.replace("required ", 'required username="admin" password="admin-secret" ')


@pytest.fixture
def secured_cluster(tmp_path, pki):
    with started_cluster(tmp_path, pki) as brokers:
        yield brokers


@contextlib.contextmanager
def started_cluster(tmp_path, pki, extra: dict[str, str] | None = None):
    zookeeper = ZooKeeperServer(tmp_path / "zookeeper").start()
    brokers: list[SecureBroker] = []
    try:
        for broker_id in (1, 2):
            ports = {"SASL_SSL": free_port(), "PLAINTEXT": free_port()}
            settings = {
                **CLUSTER_SETTINGS, "broker.id": str(broker_id),
                "zookeeper.connect": f"{zookeeper.connect_string}/kcore",
                "listeners": f"PLAINTEXT://127.0.0.1:{ports['PLAINTEXT']},"
                             f"SASL_SSL://127.0.0.1:{ports['SASL_SSL']}",
                "inter.broker.listener.name": "SASL_SSL",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": BROKER_JAAS,
                "ssl.keystore.location": str(pki.server_file),
                "ssl.truststore.location": str(pki.ca_file),
                "http.listeners": "",
                "offsets.topic.replication.factor": "2",
                **(extra or {}),
            }
            process = BrokerProcess(tmp_path / f"broker-{broker_id}", settings,
                                    port=ports["PLAINTEXT"]).start()
            brokers.append(SecureBroker(process, ports, pki))
        yield brokers
    finally:
        for broker in brokers:
            broker.process.kill()
        zookeeper.kill()


def both_registered(admin: AdminClient) -> None:
    deadline = time.monotonic() + 30
    while len(admin.list_topics(timeout=5).brokers) < 2:
        assert time.monotonic() < deadline, "both brokers registered"
        time.sleep(0.2)


def wait_for_full_isr(admin: AdminClient, topic: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions
        if all(len(p.isrs) == 2 for p in partitions.values()):
            return
        assert time.monotonic() < deadline, {i: p.isrs for i, p in partitions.items()}
        time.sleep(0.2)


def test_replication_over_sasl_ssl(secured_cluster):
    first, second = secured_cluster
    admin = AdminClient({"bootstrap.servers": first.address("PLAINTEXT")})
    both_registered(admin)
    brokers = admin.list_topics(timeout=5).brokers
    assert sorted(b.port for b in brokers.values()) == sorted(
        b.ports["PLAINTEXT"] for b in secured_cluster)
    topic = unique_topic("replicated")
    for future in admin.create_topics([NewTopic(topic, 2, 2)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": first.address("PLAINTEXT"), "acks": "all",
                         "message.timeout.ms": 30000})
    failures: list = []
    for i in range(200):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda e, m: failures.append(e) if e else None)
    assert producer.flush(40) == 0 and not failures, failures
    wait_for_full_isr(admin, topic)  # the followers fetch over SASL_SSL
    log = "".join(b.process.log() for b in secured_cluster)
    assert "authentication failed" not in log


REAUTH_MS = 2000


def test_brokers_reauthenticate_their_connections_to_each_other(tmp_path, pki):
    """Followers fetch and the controller talks over SASL_SSL sessions of
    2 s for 3.5 lifetimes: each connection re-authenticates, none is closed
    for an expired session, and acks=all writes keep completing."""
    with started_cluster(tmp_path, pki, {"connections.max.reauth.ms": str(REAUTH_MS)}) as brokers:
        first, _second = brokers
        admin = AdminClient({"bootstrap.servers": first.address("PLAINTEXT")})
        both_registered(admin)
        topic = unique_topic("reauth-replicated")
        for future in admin.create_topics([NewTopic(topic, 2, 2)]).values():
            future.result(30)
        wait_for_full_isr(admin, topic)
        producer = Producer({"bootstrap.servers": first.address("PLAINTEXT"), "acks": "all",
                             "message.timeout.ms": 30000})
        failures: list = []
        sent = 0
        deadline = time.monotonic() + 3.5 * REAUTH_MS / 1000
        while time.monotonic() < deadline:
            producer.produce(topic, b"v%d" % sent, on_delivery=lambda e, m: failures.append(e) if e else None)
            sent += 1
            producer.poll(0.02)
        assert producer.flush(40) == 0 and not failures, failures
        wait_for_full_isr(admin, topic)
        log = "".join(b.process.log() for b in brokers)
        assert "expired without re-authentication" not in log and "authentication failed" not in log
        assert "re-authentication" not in log, log[-3000:]  # no failed one either


def test_scram_user_added_on_one_broker_logs_in_on_the_other(secured_cluster):
    first, second = secured_cluster
    added = kcore_cli("users", "add", "zoe", "--password", "zoe-secret", "--mechanism", "SCRAM-SHA-256",
                      "--bootstrap-server", first.address("PLAINTEXT"))
    assert added.returncode == 0, added.stderr
    config = confluent_config(second, "SASL_SSL", "SCRAM-SHA-256", "zoe", "zoe-secret")
    config["bootstrap.servers"] = second.address("SASL_SSL")
    assert len(produce_and_consume(config, unique_topic("zk-scram"), count=5)) == 5
    listed = kcore_cli("users", "list", "--bootstrap-server", second.address("PLAINTEXT"))
    assert listed.stdout.split()[3:] == ["zoe", "SCRAM-SHA-256", "4096"]

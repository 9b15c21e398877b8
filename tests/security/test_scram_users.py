"""SCRAM users managed with `kcore users` (AlterUserScramCredentials /
DescribeUserScramCredentials): they authenticate, survive a broker
restart, are listed without secrets, and go when deleted. The broker keeps
salted keys only, never the password."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support import free_port
from tests.support.cli import kcore_cli
from tests.support.compat import unique_topic
from tests.support.metrics import scrape
from tests.support.secure_broker import start_secure_broker
from tests.support.security_clients import confluent_config, produce_and_consume


@pytest.fixture
def broker(tmp_path, pki):
    started = start_secure_broker(tmp_path / "data", pki)
    yield started
    started.process.kill()


def users(broker, *args: str, stdin: str | None = None):
    return kcore_cli("users", *args, "--bootstrap-server", broker.address("PLAINTEXT"), stdin=stdin)


def refused(broker, mechanism: str, user: str, password: str) -> bool:
    errors: list = []
    producer = Producer({**confluent_config(broker, "SASL_SSL", mechanism, user, password),
                         "error_cb": errors.append})
    for _ in range(50):
        if errors:
            break
        producer.poll(0.2)
    return any(e.code() == KafkaError._AUTHENTICATION for e in errors)


def test_users_added_by_cli_authenticate_after_restart(broker):
    assert users(broker, "add", "carol", "--password", "carol-secret").returncode == 0
    added = users(broker, "add", "dave", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192",
                  stdin="dave-secret\n")
    assert added.returncode == 0, added.stderr
    broker.process.restart()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        topic = unique_topic("scram-restart")
        config = confluent_config(broker, "SASL_SSL", mechanism, "carol", "carol-secret")
        assert len(produce_and_consume(config, topic, count=5)) == 5
    config = confluent_config(broker, "SASL_PLAINTEXT", "SCRAM-SHA-512", "dave", "dave-secret")
    assert len(produce_and_consume(config, unique_topic("scram-dave"), count=5)) == 5
    assert refused(broker, "SCRAM-SHA-256", "dave", "dave-secret")  # only SHA-512 was added


def test_list_shows_mechanisms_and_iterations_never_secrets(broker):
    assert users(broker, "add", "erin", "--password", "erin-secret", "--iterations", "5000").returncode == 0
    listed = users(broker, "list")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert rows == [["erin", "SCRAM-SHA-256", "5000"], ["erin", "SCRAM-SHA-512", "5000"]]
    stored = (broker.process.data_dir / "__scram_credentials.json").read_text()
    assert "erin" in stored and "erin-secret" not in stored and "stored_key=" in stored
    missing = users(broker, "list", "nobody")
    assert missing.returncode == 1 and "RESOURCE_NOT_FOUND" in missing.stderr


def test_deleted_user_is_refused(broker):
    assert users(broker, "add", "frank", "--password", "frank-secret").returncode == 0
    config = confluent_config(broker, "SASL_SSL", "SCRAM-SHA-256", "frank", "frank-secret")
    assert len(produce_and_consume(config, unique_topic("scram-frank"), count=3)) == 3
    assert users(broker, "delete", "frank").returncode == 0
    assert refused(broker, "SCRAM-SHA-256", "frank", "frank-secret")
    assert users(broker, "list").stdout.splitlines()[1:] == []
    again = users(broker, "delete", "frank", "--mechanism", "SCRAM-SHA-256")
    assert again.returncode == 1 and "RESOURCE_NOT_FOUND" in again.stderr


def test_unacceptable_credentials_are_refused_with_kafkas_errors(broker):
    too_few = users(broker, "add", "gina", "--password", "x", "--iterations", "100")
    assert too_few.returncode == 1 and "UNACCEPTABLE_CREDENTIAL" in too_few.stderr
    too_many = users(broker, "add", "gina", "--password", "x", "--iterations", "20000")
    assert too_many.returncode == 1 and "UNACCEPTABLE_CREDENTIAL" in too_many.stderr
    assert users(broker, "list").stdout.splitlines()[1:] == []



def test_confluent_admin_client_adds_a_user_that_then_authenticates(tmp_path, pki):
    """librdkafka 2.16 writes AlterUserScramCredentials v0 with one byte
    after its last field; Kafka ignores it, and kcore answers it too and
    counts it on /metrics."""
    http_port = free_port()
    broker = start_secure_broker(tmp_path / "data", pki, {"http.listeners": f"http://127.0.0.1:{http_port}"})
    try:
        admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
        upsert = UserScramCredentialUpsertion(
            "hana", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"hana-secret")
        admin.alter_user_scram_credentials([upsert])["hana"].result(timeout=15)
        described = admin.describe_user_scram_credentials(["hana"])["hana"].result(timeout=15)
        assert [i.iterations for i in described.scram_credential_infos] == [4096]
        config = confluent_config(broker, "SASL_SSL", "SCRAM-SHA-256", "hana", "hana-secret")
        assert len(produce_and_consume(config, unique_topic("scram-hana"), count=3)) == 3
        samples = scrape(f"http://127.0.0.1:{http_port}")
        counted = {labels: value for (name, labels), value in samples.items()
                   if name == "kcore_network_requests_with_trailing_bytes_total"}
        assert counted == {(("api_key", "51"), ("listener", "PLAINTEXT")): 1.0}
    finally:
        broker.process.kill()

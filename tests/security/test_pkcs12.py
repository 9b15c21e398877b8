"""PKCS12 key and trust stores (ssl.keystore.type / ssl.truststore.type =
PKCS12, keytool's default format): a broker serving TLS with mutual
authentication from them to a real client, and clear refusals of a wrong
password, a store without a key and Java's JKS."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Consumer, Producer, TopicPartition
from cryptography import x509
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12

from kcore.config import BrokerConfig, ConfigError
from kcore.listener_config import Listener
from kcore.server.security import inter_broker_security, server_ssl_context
from tests.support import BrokerProcess, free_port

STORE_PASSWORD = "store-secret"
MESSAGES = 20


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pkcs12")
    ca = trustme.CA(organization_name="kcore PKCS12 CA")
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("pkcs12-client@example.com", common_name="pkcs12-client")
    key = load_pem_private_key(server.private_key_pem.bytes(), None)
    chain = [_cert(blob.bytes()) for blob in server.cert_chain_pems]
    paths = {name: directory / name for name in
             ("keystore.p12", "truststore.p12", "ca.pem", "client.pem", "client.key", "certs-only.p12")}
    encryption = BestAvailableEncryption(STORE_PASSWORD.encode())
    paths["keystore.p12"].write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", key, chain[0], chain[1:], encryption))  # type: ignore[arg-type]
    trusted = _cert(ca.cert_pem.bytes())
    paths["truststore.p12"].write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [trusted], encryption))
    paths["certs-only.p12"].write_bytes(paths["truststore.p12"].read_bytes())
    ca.cert_pem.write_to_path(str(paths["ca.pem"]))
    for blob in client.cert_chain_pems:
        blob.write_to_path(str(paths["client.pem"]), append=True)
    client.private_key_pem.write_to_path(str(paths["client.key"]))
    return paths


def _settings(stores: dict[str, Path], port: int, **extra: str) -> dict[str, str]:
    return {"listeners": f"SSL://127.0.0.1:{port}", "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(stores["keystore.p12"]), "ssl.keystore.password": STORE_PASSWORD,
            "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(stores["truststore.p12"]),
            "ssl.truststore.password": STORE_PASSWORD, "ssl.client.auth": "required",
            "http.listeners": "", **extra}


def test_a_broker_serves_mutual_tls_from_pkcs12_stores(stores, tmp_path):
    port = free_port()
    broker = BrokerProcess(tmp_path / "data", _settings(stores, port), port=port).start()
    try:
        client = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
                  "ssl.ca.location": str(stores["ca.pem"]),
                  "ssl.certificate.location": str(stores["client.pem"]),
                  "ssl.key.location": str(stores["client.key"])}
        topic = f"pkcs12-{uuid.uuid4().hex[:8]}"
        producer = Producer(client)
        for i in range(MESSAGES):
            producer.produce(topic, b"v%d" % i, partition=0)
        assert producer.flush(30) == 0
        consumer = Consumer({**client, "group.id": topic, "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        values = []
        for _ in range(60):  # bounded: 60 polls of at most 0.5 s
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) == MESSAGES:
                break
        consumer.close()
        assert values == [b"v%d" % i for i in range(MESSAGES)]
    finally:
        broker.kill()


def _context(stores, **extra):
    config = BrokerConfig(_settings(stores, 9093, **extra))
    return server_ssl_context(config, Listener("SSL", "127.0.0.1", 9093, "SSL"))


def test_the_stores_load_into_the_server_and_inter_broker_contexts(stores):
    context = _context(stores)
    assert [c["subject"] for c in context.get_ca_certs()] and context.verify_mode.name == "CERT_REQUIRED"
    security = inter_broker_security(BrokerConfig(_settings(stores, 9093)))
    assert security is not None and security.ssl_context is not None
    assert len(security.ssl_context.get_ca_certs()) == 1


@pytest.mark.parametrize("extra, named", [
    ({"ssl.keystore.password": "wrong"}, "ssl.keystore.location: cannot open the PKCS12 store"),
    ({"ssl.truststore.password": "wrong"}, "ssl.truststore.location: cannot open the PKCS12 store"),
    ({"ssl.keystore.location": "CERTS"}, "holds no private key"),
])
def test_a_wrong_password_or_a_keyless_store_is_a_config_error(stores, extra, named):
    if extra.get("ssl.keystore.location") == "CERTS":
        extra = {"ssl.keystore.location": str(stores["certs-only.p12"])}
    with pytest.raises(ConfigError, match=named):
        _context(stores, **extra)


def test_jks_is_refused_with_the_conversion_to_make():
    with pytest.raises(ConfigError, match="keytool -importkeystore"):
        BrokerConfig({"ssl.keystore.type": "JKS"})

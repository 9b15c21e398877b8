"""SASL/OAUTHBEARER with real clients (tests/support/oauth_broker.py):
librdkafka's unsecured-JWT builder (``sasl.oauthbearer.config``) and its
``oauth_cb`` with signed JWTs against a JWKS file and a JWKS served over
http; kafka-python's and aiokafka's token providers; ACLs on
``User:<sub>``; and each refusal as Kafka answers it, over the wire, with
the broker serving everyone else all along."""
from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support import BrokerProcess, free_port
from tests.support.acls import ADMIN_TIMEOUT_S, grant
from tests.support.compat import unique_topic
from tests.support.jwt_tokens import claims, client_first, ec_key, jwks, rsa_key, unsecured_token
from tests.support.oauth_broker import (
    AUDIENCE,
    ISSUER,
    JWKS_REFRESH_MS,
    JWT_HANDLER,
    LOGIN_MODULE,
    oauth_login,
    start_oauth_broker,
)
from tests.support.sasl_wire import metadata
from tests.support.security_clients import produce_and_consume
from tests.support.wire import WireClient

ALICE = "User:alice"
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    started = start_oauth_broker(tmp_path_factory.mktemp("oauth"), rsa_key("rsa-1"))
    admin = AdminClient({"bootstrap.servers": started.address("PLAINTEXT")})
    for kind, operation in ((ResourceType.TOPIC, AclOperation.ALL), (ResourceType.GROUP, AclOperation.ALL)):
        grant(admin, kind, "oauth-", operation, principal=ALICE, pattern=ResourcePatternType.PREFIXED)
    grant(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE, principal=ALICE)
    yield started
    started.stop()


def new_topic(broker) -> str:
    topic = unique_topic("oauth")
    admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(ADMIN_TIMEOUT_S)
    return topic


def librdkafka_config(broker, listener: str, **extra) -> dict:
    return {"bootstrap.servers": broker.address(listener), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "socket.timeout.ms": 10000, "message.timeout.ms": 15000,
            "reconnect.backoff.max.ms": 1000, **extra}


def signing_callback(broker, sub: str = "alice", key=None):
    """librdkafka's oauth_cb: a fresh signed JWT and its expiry (epoch s)."""
    def refresh(_config: str):
        token = broker.token(sub, 3600, key=key)
        return token, time.time() + 3600
    return refresh


# -- real clients --------------------------------------------------------------
def test_librdkafka_unsecured_jwt_builder_produces_and_consumes_as_its_principal(broker):
    topic = new_topic(broker)
    config = librdkafka_config(broker, "UNSECURED", **{
        "sasl.oauthbearer.method": "default", "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": "principal=alice scope=kafka,other lifeSeconds=600"})
    assert produce_and_consume(config, topic, count=20) == [b"value-%d" % i for i in range(20)]


@pytest.mark.parametrize("listener", ["SIGNED", "FETCHED"])
def test_librdkafka_oauth_cb_signed_jwt_produces_and_consumes(broker, listener):
    topic = new_topic(broker)
    config = librdkafka_config(broker, listener, oauth_cb=signing_callback(broker))
    assert produce_and_consume(config, topic, count=20) == [b"value-%d" % i for i in range(20)]


def test_acls_apply_to_the_tokens_subject(broker):
    topic = new_topic(broker)

    def produce_as(sub: str) -> KafkaError | None:
        reports: list = []
        producer = Producer(librdkafka_config(broker, "SIGNED", oauth_cb=signing_callback(broker, sub),
                                              retries=0, **{"message.timeout.ms": 10000}))
        producer.produce(topic, f"from {sub}".encode(), on_delivery=lambda error, _msg: reports.append(error))
        assert producer.flush(15) == 0 and len(reports) == 1
        return reports[0]

    assert produce_as("alice") is None
    refused = produce_as("mallory")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    grant(admin, ResourceType.TOPIC, topic, AclOperation.WRITE, principal="User:mallory")
    assert produce_as("mallory") is None


def test_librdkafka_reports_a_refused_token_with_kafkas_json(broker):
    errors: list = []
    expired = broker.key.sign(claims("alice", -5, iss=ISSUER, aud=AUDIENCE))
    producer = Producer(librdkafka_config(broker, "SIGNED", error_cb=errors.append,
                                          oauth_cb=lambda _config: (expired, time.time() + 3600)))
    producer.produce("oauth-never", b"x")
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert '{"status":"invalid_token"}' in errors[0].str()


class TokenProvider:
    """kafka-python's and aiokafka's token provider: a signed JWT per call."""

    def __init__(self, broker, sub: str = "alice"):
        self.broker, self.sub, self.calls = broker, sub, 0

    def token(self) -> str:
        self.calls += 1
        return self.broker.token(self.sub)

    def extensions(self) -> dict[str, str]:
        return {"traceId": "kcore-test"}  # accepted and ignored, as Kafka's validators do


def test_kafka_python_token_provider_produces_and_consumes(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(TokenProvider, AbstractTokenProvider):
        pass

    topic = new_topic(broker)
    provider = Provider(broker)
    config = {"bootstrap_servers": broker.address("SIGNED"), "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider, "request_timeout_ms": 15000}
    producer = KafkaProducer(**config)
    for i in range(10):
        producer.send(topic, b"value-%d" % i)
    producer.flush(timeout=15)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest", **config)
    received: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(received) < 10 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                received.extend(record.value for record in records)
    finally:
        consumer.close()
    assert received == [b"value-%d" % i for i in range(10)]
    assert provider.calls >= 2  # one login per connection


def test_aiokafka_token_provider_produces_and_consumes(broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def __init__(self) -> None:
            self.sync = TokenProvider(broker)

        async def token(self) -> str:
            return self.sync.token()

    topic = new_topic(broker)
    config = {"bootstrap_servers": broker.address("FETCHED"), "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Provider()}

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, b"value-%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest", **config)
        await consumer.start()
        received: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(received) < 10:
                    received.append((await consumer.getone()).value)
        finally:
            await consumer.stop()
        return received

    assert asyncio.run(scenario()) == [b"value-%d" % i for i in range(10)]


# -- refusals, exactly as Kafka answers them ------------------------------------
def _refusals(broker) -> dict[str, tuple[str, str]]:
    """name -> (listener, token) of every token a listener must refuse."""
    forger = rsa_key("rsa-1")  # the broker's kid, another key: a bad signature
    return {
        "expired": ("SIGNED", broker.token(lifetime_s=-1)),
        "wrong issuer": ("SIGNED", broker.key.sign(claims("alice", 60, iss="https://evil.test", aud=AUDIENCE))),
        "wrong audience": ("SIGNED", broker.key.sign(claims("alice", 60, iss=ISSUER, aud="billing"))),
        "bad signature": ("SIGNED", broker.token(key=forger)),
        "unknown kid": ("SIGNED", broker.token(key=ec_key("ec-unknown"))),
        "unsecured on a signed listener": ("SIGNED", unsecured_token(claims("alice", 60, iss=ISSUER, aud=AUDIENCE))),
        "expired unsecured": ("UNSECURED", unsecured_token(claims("alice", -1, scope="kafka"))),
        "signed on an unsecured listener": ("UNSECURED", broker.token(scope="kafka")),
    }


@pytest.mark.parametrize("name", ["expired", "wrong issuer", "wrong audience", "bad signature", "unknown kid",
                                  "unsecured on a signed listener", "expired unsecured",
                                  "signed on an unsecured listener"])
def test_refused_token_gets_the_json_challenge_then_sasl_authentication_failed(broker, name):
    listener, token = _refusals(broker)[name]
    client = WireClient(broker.ports[listener])
    try:
        challenge, final = oauth_login(client, token)
        assert challenge.error_code == ErrorCode.NONE
        assert challenge.auth_bytes == b'{"status":"invalid_token"}'
        assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert final.error_message == '{"status":"invalid_token"}'
        assert client.is_closed_by_peer()
    finally:
        client.close()
    assert_still_serving(broker, listener)


def test_missing_scope_is_insufficient_scope(broker):
    client = WireClient(broker.ports["UNSECURED"])
    try:
        challenge, final = oauth_login(client, unsecured_token(claims("alice", 60, scope=["read"])))
        assert challenge.auth_bytes == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
        assert (final.error_code, final.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED, '{"status":"insufficient_scope", "scope":"[kafka]"}')
    finally:
        client.close()


@pytest.mark.parametrize("message", [
    b"n,,\x01auth=Basic YWxpY2U6c2VjcmV0\x01\x01",
    b"n,,\x01auth=Bearer abc\x01",
    b"\x00\xff" * 100,
    b"",
])
def test_malformed_client_message_is_refused_with_kafkas_generic_text(broker, message):
    client = WireClient(broker.ports["SIGNED"])
    try:
        handshake = client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        assert handshake.error_code == ErrorCode.NONE
        answer = client.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": message})
        assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, GENERIC)
        assert client.is_closed_by_peer()
    finally:
        client.close()
    assert_still_serving(broker, "SIGNED")


def test_authzid_other_than_the_subject_is_refused(broker):
    client = WireClient(broker.ports["SIGNED"])
    try:
        handshake = client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        assert handshake.error_code == ErrorCode.NONE
        answer = client.request(ApiKey.SASL_AUTHENTICATE, 1,
                                {"auth_bytes": client_first(broker.token("alice"), authzid="admin")})
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "(admin) that is different from the token's principal name (alice)" in answer.error_message
    finally:
        client.close()


def assert_still_serving(broker, listener: str) -> None:
    """A good login on the same listener, then a request, are served."""
    assert logs_in(broker, listener, broker.token(scope="kafka") if listener != "UNSECURED"
                   else unsecured_token(claims("alice", 60, scope="kafka")))


def logs_in(broker, listener: str, token: str) -> bool:
    """Whether ``token`` logs in on ``listener`` and a request is then served."""
    client = WireClient(broker.ports[listener])
    try:
        answer, _ = oauth_login(client, token)
        return answer.error_code == ErrorCode.NONE and answer.auth_bytes == b"" and metadata(client) is not None
    finally:
        client.close()


# -- the JWKS over http ------------------------------------------------------
def test_a_new_key_is_fetched_for_its_first_token_and_used_after(broker):
    """A kid the set lacks fails that login and fetches the set at once
    (Kafka's RefreshingHttpsJwks); the next login with it succeeds. The
    FETCHED listener refreshes hourly, so any fetch now is that one."""
    rotated = rsa_key("rsa-rotated")
    broker.jwks_server.document = jwks(broker.key, rotated)
    token = broker.token(key=rotated)
    before = time.monotonic()
    client = WireClient(broker.ports["FETCHED"])
    try:
        challenge, final = oauth_login(client, token)
        assert final is not None and final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED, challenge
    finally:
        client.close()
    deadline = time.monotonic() + 5
    while not logs_in(broker, "FETCHED", token):  # once the fetch it started has landed
        assert time.monotonic() < deadline, "the new key was never fetched"
        time.sleep(0.1)
    assert broker.jwks_server.fetches("fetched", since=before) == 1


def test_jwks_endpoint_is_fetched_every_refresh_interval(broker):
    start = time.monotonic()
    time.sleep(3.5 * JWKS_REFRESH_MS / 1000)
    assert 2 <= broker.jwks_server.fetches("polled", since=start) <= 6  # about one a second


@pytest.mark.parametrize("url, message", [
    ("file:///nonexistent/jwks.json", "contains a file (/nonexistent/jwks.json) that doesn't exist"),
    ("http://127.0.0.1:{closed}/jwks.json", "cannot read the JWKS at start"),
    ("ftp://127.0.0.1/jwks.json", "invalid protocol (ftp)"),
])
def test_a_jwks_the_broker_cannot_read_stops_it_at_start(tmp_path, url, message):
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    broker = BrokerProcess(tmp_path / "data", {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{free_port()}", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "http.listeners": "", prefix + "sasl.jaas.config": LOGIN_MODULE + ";",
        prefix + "sasl.server.callback.handler.class": JWT_HANDLER,
        prefix + "sasl.oauthbearer.jwks.endpoint.url": url.format(closed=free_port())})
    with pytest.raises(RuntimeError, match="broker exited with 2") as failed:
        broker.start()
    assert message in str(failed.value)

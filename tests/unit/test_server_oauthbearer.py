"""OAUTHBEARER in the server layer: the JWKS file and endpoint as Kafka
reads and refreshes them, the listener's validator built from Kafka's
config names (errors at start), and the SASL session a token's expiry
bounds (KIP-368, Kafka's SaslServerAuthenticator)."""
from __future__ import annotations

import asyncio
import http.client
import json
import time

import pytest

from kcore.config import BrokerConfig, ConfigError
from kcore.security.jwks import JwtValidator
from kcore.security.oauthbearer import UnsecuredValidator
from kcore.server.jwks_source import FileJwks, HttpJwks
from kcore.server.sasl import AuthFailures, SaslAuthenticator, SaslSettings, SaslState, Session
from kcore.server.security import inter_broker_security, oauthbearer_validator
from tests.support.jwt_tokens import claims, client_first, jwks, rsa_key, unsecured_token

RSA, ROTATED = rsa_key("rsa-1"), rsa_key("rsa-2")
LISTENER = "listener.name.sasl_plaintext.oauthbearer."
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
JWT_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def oauth_config(**settings: str) -> BrokerConfig:
    return BrokerConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:1", "sasl.enabled.mechanisms": "OAUTHBEARER",
                         LISTENER + "sasl.jaas.config": LOGIN_MODULE + ";", **settings})


# -- the JWKS file --------------------------------------------------------------
def test_jwks_file_is_read_at_start(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(RSA)))
    source = FileJwks(path.as_uri())
    assert source.key_set().key_ids() == ["rsa-1"]
    path.write_text(json.dumps(jwks(ROTATED)))  # read once, as Kafka's file resolver
    assert source.key_set().key_ids() == ["rsa-1"]


@pytest.mark.parametrize("make, reason", [
    (lambda d: d / "absent.json", "doesn't exist"),
    (lambda d: d, "references a directory"),
    (lambda d: (d / "bad.json").write_text("{}") and d / "bad.json", '"keys" array'),
])
def test_bad_jwks_file_is_a_config_error(tmp_path, make, reason):
    with pytest.raises(ConfigError, match=reason):
        FileJwks(make(tmp_path).as_uri())


# -- the JWKS endpoint --------------------------------------------------------
class Endpoint:
    """What a JWKS URL answers, changed by the test; counts the fetches."""

    def __init__(self, *keys):
        self.document: bytes | Exception = json.dumps(jwks(*keys)).encode()
        self.fetches = 0

    def __call__(self, url: str) -> bytes:
        self.fetches += 1
        if isinstance(self.document, Exception):
            raise self.document
        return self.document


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def http_jwks(endpoint: Endpoint, clock: Clock, refresh_ms: int = 50) -> HttpJwks:
    return HttpJwks("http://127.0.0.1:1/jwks", refresh_ms, 10, 40, fetch=endpoint, clock=clock)


def test_endpoint_unreachable_at_start_is_a_config_error():
    endpoint = Endpoint(RSA)
    endpoint.document = OSError("connection refused")
    with pytest.raises(ConfigError, match="cannot read the JWKS at start: connection refused"):
        http_jwks(endpoint, Clock())


def test_endpoint_is_refreshed_and_a_failing_fetch_keeps_the_last_keys():
    endpoint, clock = Endpoint(RSA), Clock()
    source = http_jwks(endpoint, clock)

    async def scenario() -> None:
        refresher = asyncio.get_running_loop().create_task(source.run())
        endpoint.document = json.dumps(jwks(RSA, ROTATED)).encode()
        await _until(lambda: source.key_set().key_ids() == ["rsa-1", "rsa-2"])
        endpoint.document = http.client.IncompleteRead(b"{")  # not an OSError: still only a failed fetch
        fetched = endpoint.fetches
        await _until(lambda: endpoint.fetches >= fetched + 2)
        endpoint.document = OSError("down")
        fetched = endpoint.fetches
        await _until(lambda: endpoint.fetches >= fetched + 3)  # retried with backoff, then every refresh
        assert source.key_set().key_ids() == ["rsa-1", "rsa-2"]
        refresher.cancel()

    asyncio.run(scenario())


def test_unknown_kid_fetches_at_once_but_once_a_minute_per_kid():
    endpoint, clock = Endpoint(RSA), Clock()
    source = http_jwks(endpoint, clock, refresh_ms=3_600_000)

    async def scenario() -> None:
        endpoint.document = json.dumps(jwks(RSA, ROTATED)).encode()
        source.key_not_found("rsa-2")
        await _until(lambda: "rsa-2" in source.key_set().key_ids())
        assert endpoint.fetches == 2
        for _ in range(3):
            source.key_not_found("rsa-9")
            await asyncio.sleep(0.02)
        assert endpoint.fetches == 3  # one fetch for rsa-9 within the minute
        source.key_not_found(None)
        source.key_not_found("k" * 1001)  # no kid, or one too long to be real: never fetched for
        await asyncio.sleep(0.02)
        assert endpoint.fetches == 3
        clock.now += 61
        source.key_not_found("rsa-9")
        await _until(lambda: endpoint.fetches == 4)

    asyncio.run(scenario())


async def _until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# -- the listener's validator from the config -----------------------------------
def test_unsecured_validator_is_kafkas_default_and_reads_the_jaas_options():
    config = oauth_config(**{LISTENER + "sasl.jaas.config":
                             LOGIN_MODULE + ' unsecuredValidatorRequiredScope="kafka" '
                             'unsecuredValidatorAllowableClockSkewMs="2000";'})
    validator, refresher = oauthbearer_validator(config, config.listeners()[0])
    assert isinstance(validator, UnsecuredValidator) and refresher is None
    assert (validator.required_scope, validator.allowable_clock_skew_ms) == (["kafka"], 2000)


def test_a_jwks_url_without_kafkas_jwt_handler_leaves_unsecured_validation_and_warns(tmp_path, caplog):
    """Kafka validates with its default (unsecured) handler unless told
    otherwise, whatever the URL says; kcore does the same and says so."""
    config = oauth_config(**{"sasl.oauthbearer.jwks.endpoint.url": (tmp_path / "jwks.json").as_uri()})
    validator, _ = oauth_validator_logged(config, caplog)
    assert isinstance(validator, UnsecuredValidator)
    assert "validates unsecured OAUTHBEARER tokens" in caplog.text and JWT_HANDLER in caplog.text


def oauth_validator_logged(config: BrokerConfig, caplog):
    with caplog.at_level("WARNING", logger="kcore.server.security"):
        return oauthbearer_validator(config, config.listeners()[0])


def test_jwt_validator_reads_prefixed_settings_first(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(RSA)))
    config = oauth_config(**{
        LISTENER + "sasl.server.callback.handler.class": JWT_HANDLER,
        "sasl.oauthbearer.jwks.endpoint.url": path.as_uri(),
        "sasl.oauthbearer.expected.issuer": "https://broker-wide.example",
        "listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer": "https://listener.example",
        LISTENER + "sasl.oauthbearer.expected.issuer": "https://idp.example",
        LISTENER + "sasl.oauthbearer.sub.claim.name": "client_id"})
    validator, refresher = oauthbearer_validator(config, config.listeners()[0])
    assert isinstance(validator, JwtValidator) and refresher is None
    token = RSA.sign({"client_id": "svc", "iss": "https://idp.example", "iat": int(time.time()),
                      "exp": int(time.time()) + 60})
    assert validator.validate(token).principal_name == "svc"


@pytest.mark.parametrize("settings, reason", [
    ({LISTENER + "sasl.jaas.config": None}, "sets no listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"),
    ({LISTENER + "sasl.server.callback.handler.class": "com.example.Custom"}, "kcore validates OAUTHBEARER"),
    ({LISTENER + "sasl.server.callback.handler.class": JWT_HANDLER}, "needs sasl.oauthbearer.jwks.endpoint.url"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "ftp://127.0.0.1/jwks"}, "invalid protocol \\(ftp\\)"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "http:///jwks"}, "without a host"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "not a url"}, "invalid protocol"),
    ({LISTENER + "sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"}, "refresh.ms"),
    ({"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "500",
      "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "100"}, "less than"),
    ({"sasl.oauthbearer.sub.claim.name": " "}, "non-whitespace"),
    ({"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class": JWT_HANDLER,
      "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x required;"}, "no pluggable callback handler for PLAIN"),
])
def test_bad_oauthbearer_settings_fail_at_start(settings, reason):
    base = {"listeners": "SASL_PLAINTEXT://127.0.0.1:1", "sasl.enabled.mechanisms": "OAUTHBEARER",
            LISTENER + "sasl.jaas.config": LOGIN_MODULE + ";"}
    merged = {key: value for key, value in {**base, **settings}.items() if value is not None}
    with pytest.raises(ConfigError, match=reason):
        BrokerConfig(merged)


@pytest.mark.parametrize("settings, reason", [
    ({LISTENER + "sasl.jaas.config": LOGIN_MODULE + ' unsecuredValidatorAllowableClockSkewMs="-5";'},
     "must not be negative"),
    ({LISTENER + "sasl.jaas.config": LOGIN_MODULE + "; Other required;"}, "exactly 1"),
    ({LISTENER + "sasl.server.callback.handler.class": JWT_HANDLER,
      "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json"}, "doesn't exist"),
])
def test_bad_validator_options_and_jwks_fail_when_the_listener_is_built(settings, reason):
    config = oauth_config(**settings)
    with pytest.raises(ConfigError, match=reason):
        oauthbearer_validator(config, config.listeners()[0])


def test_brokers_do_not_log_in_to_each_other_with_oauthbearer():
    config = oauth_config(**{"sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"})
    with pytest.raises(ConfigError, match="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"):
        inter_broker_security(config)


# -- the session a token bounds ---------------------------------------------------
WALL = 1_700_000_000.0


def authenticator(max_reauth_ms: int = 0, previous: Session | None = None) -> SaslAuthenticator:
    settings = SaslSettings(["OAUTHBEARER"], {}, _no_scram, b"k" * 32, {"OAUTHBEARER": max_reauth_ms},
                            oauthbearer=UnsecuredValidator({}, clock=lambda: WALL), wall_clock=lambda: WALL)
    sasl = SaslAuthenticator(settings, AuthFailures(0), "127.0.0.1", previous)
    sasl.handshake(1, "OAUTHBEARER")
    return sasl


async def _no_scram(mechanism: str, user: str):
    return None


def login(sasl: SaslAuthenticator, message: bytes) -> tuple[bytes, str | None]:
    return asyncio.run(sasl.authenticate(message))


@pytest.mark.parametrize("max_reauth_ms, lifetime_s, expected_ms", [
    (0, 3, 3000),  # the token alone bounds the session, the setting off
    (1000, 3, 1000),  # the smaller of both
    (60000, 3, 3000),
])
def test_session_lifetime_is_the_time_left_to_the_tokens_expiry(max_reauth_ms, lifetime_s, expected_ms):
    sasl = authenticator(max_reauth_ms)
    assert login(sasl, client_first(unsecured_token(claims("alice", lifetime_s, now=WALL)))) == (b"", None)
    assert sasl.complete and sasl.user == "alice"
    assert sasl.session_lifetime_ms == expected_ms
    assert sasl.session is not None and sasl.session.expires is not None
    assert sasl.session.expires - time.monotonic() == pytest.approx(expected_ms / 1000, abs=0.5)


def test_malformed_message_is_told_kafkas_generic_text():
    sasl = authenticator()
    assert login(sasl, b"n,,\x01auth=Basic x\x01\x01") == (
        b"", "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")
    assert sasl.state is SaslState.FAILED
    again = authenticator(previous=Session("OAUTHBEARER", "alice", time.monotonic() + 1))
    assert "during re-authentication" in (login(again, b"garbage")[1] or "")


def test_refused_token_fails_on_the_clients_separator():
    sasl = authenticator()
    challenge, failure = login(sasl, client_first(unsecured_token(claims("alice", -60, now=WALL))))
    assert (challenge, failure, sasl.state) == (b'{"status":"invalid_token"}', None, SaslState.AUTHENTICATE)
    assert login(sasl, b"\x01") == (b"", '{"status":"invalid_token"}')
    assert sasl.state is SaslState.FAILED


def test_reauthentication_with_another_subject_is_refused():
    sasl = authenticator(previous=Session("OAUTHBEARER", "alice", time.monotonic() + 1))
    _, failure = login(sasl, client_first(unsecured_token(claims("bob", 60, now=WALL))))
    assert failure == "Cannot change principals during re-authentication from User:alice: User:bob"

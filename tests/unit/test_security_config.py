"""Listener security settings as Kafka names them: the protocol map, the
listener.name.<listener>. prefix, the JAAS config's users, and the errors
a broker gives at start for what it cannot serve."""
import pytest

from kcore.config import BrokerConfig, ConfigError
from kcore.security.jaas import JaasError, parse_jaas_config
from kcore.security.plain import PlainServer
from kcore.security.scram import AuthenticationFailed

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


def test_jaas_config_gives_plain_users_as_kafka_reads_them():
    module, = parse_jaas_config(JAAS)
    assert module.class_name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert module.flag == "required"
    assert module.users() == {"admin": "admin-secret", "alice": "alice-secret"}


def test_jaas_config_quotes_escapes_and_several_modules():
    modules = parse_jaas_config('A required username="ad\\"min" password=bare;\n B optional x="a;b=c";')
    assert modules[0].options == {"username": 'ad"min', "password": "bare"}
    assert (modules[1].flag, modules[1].options) == ("optional", {"x": "a;b=c"})


@pytest.mark.parametrize("text", ["", "A required", "A sometimes x=1;", "A required x 1;",
                                  'A required x="unterminated;'])
def test_malformed_jaas_config_is_refused(text):
    with pytest.raises(JaasError):
        parse_jaas_config(text)


def test_protocol_map_default_is_kafkas_and_names_each_listener():
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:2",
                           "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    assert config["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL")
    assert [(item.name, item.security_protocol) for item in config.listeners()] == [
        ("PLAINTEXT", "PLAINTEXT"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT")]


def test_listener_without_protocol_is_a_clear_error():
    with pytest.raises(ConfigError, match="INTERNAL has no security protocol.*listener.security.protocol.map"):
        BrokerConfig({"listeners": "INTERNAL://127.0.0.1:1"})


def test_prefixed_keys_win_for_their_listener_only():
    config = BrokerConfig({
        "listeners": "CLIENTS://127.0.0.1:1,BROKERS://127.0.0.1:2",
        "listener.security.protocol.map": "CLIENTS:SASL_PLAINTEXT,BROKERS:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.clients.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.clients.plain.sasl.jaas.config": JAAS,
        "inter.broker.listener.name": "BROKERS"})
    assert config.listener_value("CLIENTS", "sasl.enabled.mechanisms") == ["PLAIN", "SCRAM-SHA-256"]
    assert config.listener_value("BROKERS", "sasl.enabled.mechanisms") == ["SCRAM-SHA-512"]
    assert config.jaas_config("CLIENTS", "PLAIN") == JAAS
    assert config.jaas_config("BROKERS", "PLAIN") is None
    assert config.inter_broker_listener().name == "BROKERS"
    assert config.advertised_address() == ("127.0.0.1", 2)


def test_max_reauth_ms_per_mechanism_then_listener_then_broker():
    """Kafka's SaslChannelBuilder order: listener.name.<l>.<mechanism>.,
    then listener.name.<l>., then the broker-wide connections.max.reauth.ms."""
    config = BrokerConfig({
        "listeners": "CLIENTS://127.0.0.1:1,BROKERS://127.0.0.1:2",
        "listener.security.protocol.map": "CLIENTS:SASL_PLAINTEXT,BROKERS:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "connections.max.reauth.ms": "60000",
        "listener.name.clients.connections.max.reauth.ms": "30000",
        "listener.name.clients.scram-sha-512.connections.max.reauth.ms": "10000"})
    assert config.max_reauth_ms("CLIENTS", "SCRAM-SHA-512") == 10000
    assert config.max_reauth_ms("CLIENTS", "SCRAM-SHA-256") == 30000
    assert config.max_reauth_ms("BROKERS", "SCRAM-SHA-512") == 60000
    assert BrokerConfig({})["connections.max.reauth.ms"] == 0  # Kafka's default: off


@pytest.mark.parametrize("settings, message", [
    ({"listener.name.sasl_plaintext.sasl.mechanism.typo": "x"}, "unknown configuration key"),
    ({"listener.name.sasl_plaintext.gssapi.connections.max.reauth.ms": "1"}, "GSSAPI"),
    ({"sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms": "-1"},
     "scram-sha-256.connections.max.reauth.ms"),
    ({"listener.name.sasl_plaintext.gssapi.sasl.jaas.config": "x"}, "GSSAPI"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "kcore serves only PLAIN"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "plain.sasl.jaas.config"),
    ({"inter.broker.listener.name": "OTHER"}, "not one of listeners"),
])
def test_unservable_sasl_settings_fail_at_start(settings, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:1", **settings})


def test_ssl_listener_needs_a_key_store_and_client_auth_a_trust_store():
    with pytest.raises(ConfigError, match="needs a key store"):
        BrokerConfig({"listeners": "SSL://127.0.0.1:1"})
    with pytest.raises(ConfigError, match="truststore"):
        BrokerConfig({"listeners": "SSL://127.0.0.1:1", "ssl.keystore.location": "/k.pem",
                      "listener.name.ssl.ssl.client.auth": "required"})
    with pytest.raises(ConfigError, match="ssl.client.auth"):
        BrokerConfig({"ssl.client.auth": "sometimes"})


@pytest.mark.parametrize("token, reason", [
    (b"\0alice\0alice-secret", None),
    (b"alice\0alice\0alice-secret", None),
    (b"bob\0alice\0alice-secret", "authorization id"),
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0nobody\0alice-secret", "Invalid username or password"),
    (b"alice-secret", "3 NUL-separated"),
    (b"\0\0", "3 NUL-separated"),
    (b"\0alice\0\xff", "UTF-8"),
])
def test_plain_checks_the_jaas_users(token, reason):
    import asyncio
    server = PlainServer({"alice": "alice-secret"})
    if reason is None:
        asyncio.run(server.evaluate(token))
        assert server.complete and server.user == "alice"
    else:
        with pytest.raises(AuthenticationFailed, match=reason):
            asyncio.run(server.evaluate(token))
        assert server.user is None

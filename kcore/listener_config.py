"""Listeners and their security settings, with Kafka's names.

A listener is ``NAME://host:port``; ``listener.security.protocol.map``
(``NAME:PROTOCOL,...``) gives each name one of Kafka's four security
protocols. Settings of one listener may be prefixed
``listener.name.<name lowercased>.<config>`` (Kafka's ListenerName
``configPrefix``) and then win over the unprefixed key; the SASL JAAS
config exists only in that form, per mechanism:
``listener.name.<name>.<mechanism lowercased>.sasl.jaas.config``; so may
``connections.max.reauth.ms`` and the OAUTHBEARER settings, which win over
the listener's and the broker-wide value for that mechanism (Kafka's
SaslChannelBuilder, and OAuth's ConfigurationUtils for
``listener.name.<name>.oauthbearer.sasl.oauthbearer.*``).

Pure data and parsing; the server layer turns it into SSL contexts and
SASL authenticators (kcore.server.security).
"""
from __future__ import annotations

from dataclasses import dataclass

from kcore.config_def import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
# The mechanisms kcore serves (Kafka's default, GSSAPI, needs Kerberos).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
LISTENER_PREFIX = "listener.name."
JAAS_SUFFIX = ".sasl.jaas.config"
REAUTH_KEY = "connections.max.reauth.ms"
CALLBACK_HANDLER_KEY = "sasl.server.callback.handler.class"
# The OAUTHBEARER token validation settings (Kafka's SaslConfigs).
OAUTHBEARER_KEYS = (
    "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
)
# Keys a listener prefix may carry per SASL mechanism:
# listener.name.<name>.<mechanism lowercased>.<key>.
PER_MECHANISM_KEYS = ("sasl.jaas.config", REAUTH_KEY, CALLBACK_HANDLER_KEY, *OAUTHBEARER_KEYS)
# sasl.server.callback.handler.class values for OAUTHBEARER: Kafka's
# default, which validates unsecured tokens, and its JWKS validator (under
# its Kafka 4 name and the 3.x one).
UNSECURED_VALIDATOR_CLASS = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler")
JWT_VALIDATOR_CLASSES = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
)

# Keys a listener prefix may carry (Kafka accepts every ssl.* and sasl.*
# key of its broker config this way; these are the ones kcore reads).
PER_LISTENER_KEYS = frozenset({
    "sasl.enabled.mechanisms", REAUTH_KEY, CALLBACK_HANDLER_KEY, *OAUTHBEARER_KEYS,
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols",
    "ssl.protocol", "ssl.cipher.suites",
})


@dataclass(frozen=True)
class Listener:
    name: str
    security_protocol: str
    host: str
    port: int

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}; names are upper-cased as
    listener names are."""
    result: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"{item!r} is not NAME:PROTOCOL with PROTOCOL one of "
                             + ", ".join(SECURITY_PROTOCOLS))
        result[name.strip().upper()] = protocol
    return result


def split_prefixed(key: str) -> tuple[str, str] | None:
    """``listener.name.<name>.<config>`` -> (name lowercased, config), or
    None for a key without the prefix. A prefixed key kcore does not read
    is a ConfigError, as any unknown key is."""
    if not key.startswith(LISTENER_PREFIX):
        return None
    name, _, config = key[len(LISTENER_PREFIX):].partition(".")
    if not name or not config:
        raise ConfigError(f"{key!r} is not listener.name.<listener>.<config>")
    if config in PER_LISTENER_KEYS:
        return name.lower(), config
    for suffix in PER_MECHANISM_KEYS:
        if config.endswith("." + suffix):
            mechanism = config[:-len(suffix) - 1].upper()
            if mechanism in SASL_MECHANISMS:
                return name.lower(), config
            raise ConfigError(f"{key}: SASL mechanism {mechanism!r} is not one of "
                              + ", ".join(SASL_MECHANISMS))
    raise ConfigError(f"unknown configuration key {key} (a listener prefix takes "
                      "sasl.enabled.mechanisms, connections.max.reauth.ms, sasl.oauthbearer.*, "
                      "<mechanism>.sasl.jaas.config, <mechanism>.connections.max.reauth.ms, "
                      "<mechanism>.sasl.oauthbearer.* and ssl.* keys)")


def jaas_key(mechanism: str) -> str:
    return mechanism.lower() + JAAS_SUFFIX


def mechanism_key(mechanism: str, key: str) -> str:
    """``<mechanism lowercased>.<key>``, the per-mechanism form of ``key``."""
    return f"{mechanism.lower()}.{key}"

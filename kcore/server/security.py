"""Per-listener security made from the broker config: the SSLContext of an
SSL/SASL_SSL listener and the SASL settings of a SASL listener.

TLS material is PEM (Kafka's ``ssl.keystore.type=PEM``): a key store
file with the private key and certificate chain (``ssl.keystore.location``,
key encrypted with ``ssl.key.password`` or not) or both inline
(``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``); CA
certificates from ``ssl.truststore.location`` or inline
``ssl.truststore.certificates``. Or PKCS12 files (``ssl.keystore.type`` /
``ssl.truststore.type=PKCS12``, opened with ``ssl.keystore.password`` /
``ssl.truststore.password``; server/pkcs12.py). ``ssl.client.auth`` maps to the context's
verify mode: required = CERT_REQUIRED, requested = CERT_OPTIONAL (checked
when sent), none = CERT_NONE.

A client certificate names the connection's principal as Kafka's default
principal builder does: ``User:`` + the subject's RFC 2253 form as Java's
X500Principal prints it (most specific attribute first: ``CN=client,O=kcore,C=FR``).
"""
from __future__ import annotations

import logging
import os
import secrets
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

from kcore.client.security import ClientSecurity
from kcore.config import BrokerConfig, ConfigError
from kcore.listener_config import CALLBACK_HANDLER_KEY, JWT_VALIDATOR_CLASSES, Listener
from kcore.metadata_store.base import CredentialStore
from kcore.security.jaas import JaasError, parse_jaas_config
from kcore.security.jwks import JwtSettings, JwtValidator
from kcore.security.oauthbearer import OAuthBearerConfigError, TokenValidator, UnsecuredValidator
from kcore.server import pkcs12
from kcore.server.jwks_source import HttpJwks, jwks_source
from kcore.server.sasl import SaslSettings

log = logging.getLogger(__name__)

_VERIFY = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
                 "TLS": ssl.TLSVersion.MAXIMUM_SUPPORTED}
# Java's X500Principal keyword for each attribute Python's getpeercert() names.
_RDN_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
                 "stateOrProvinceName": "ST", "organizationName": "O",
                 "organizationalUnitName": "OU", "domainComponent": "DC", "userId": "UID",
                 "streetAddress": "STREET"}


def server_ssl_context(config: BrokerConfig, listener: Listener) -> ssl.SSLContext:
    def value(name: str) -> Any:
        return config.listener_value(listener.name, name)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [_TLS_VERSIONS[v] for v in value("ssl.enabled.protocols") if v in _TLS_VERSIONS]
    if not enabled:
        raise ConfigError(f"listener {listener.name}: ssl.enabled.protocols names no TLSv1.2 or TLSv1.3")
    context.minimum_version = min(enabled)
    context.maximum_version = _TLS_VERSIONS[value("ssl.protocol")]
    if value("ssl.cipher.suites"):
        _apply(listener, "ssl.cipher.suites", context.set_ciphers, ":".join(value("ssl.cipher.suites")))
    _load_key_store(context, listener, value)
    cafile, cadata = _trust_store(listener, value)
    if cafile is not None or cadata is not None:
        name = "ssl.truststore.location" if value("ssl.truststore.location") else "ssl.truststore.certificates"
        _apply(listener, name, context.load_verify_locations, cafile, None, cadata)
    context.verify_mode = _VERIFY[value("ssl.client.auth")]
    return context


def _load_key_store(context: ssl.SSLContext, listener: Listener, value: Callable[[str], Any]) -> None:
    """The listener's own key and certificate chain, from whichever form
    the config gives; nothing when it gives none (a client context)."""
    location, password = value("ssl.keystore.location"), value("ssl.key.password")
    if location is not None and value("ssl.keystore.type") == "PKCS12":
        store_password = value("ssl.keystore.password")
        try:
            key, chain = pkcs12.keystore_pem(location, store_password)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"listener {listener.name}: ssl.keystore.location: {exc}") from None
        _load_inline_keystore(context, listener, chain, key, store_password)
    elif location is not None:
        _apply(listener, "ssl.keystore.location", context.load_cert_chain, location, None, password)
    elif value("ssl.keystore.key") is not None:
        _load_inline_keystore(context, listener, value("ssl.keystore.certificate.chain"),
                              value("ssl.keystore.key"), password)


def _trust_store(listener: Listener, value: Callable[[str], Any]) -> tuple[str | None, str | None]:
    """(CA file, CA certificates in PEM) to trust; (None, None) for none."""
    location = value("ssl.truststore.location")
    if location is not None and value("ssl.truststore.type") == "PKCS12":
        try:
            return None, pkcs12.truststore_pem(location, value("ssl.truststore.password"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"listener {listener.name}: ssl.truststore.location: {exc}") from None
    return location, value("ssl.truststore.certificates") if location is None else None


def _load_inline_keystore(context: ssl.SSLContext, listener: Listener, chain: str, key: str,
                          password: str | None) -> None:
    """The ssl module loads keys from files only: a private directory holds
    them for the call and is gone after it."""
    with tempfile.TemporaryDirectory(prefix="kcore-keystore-") as directory:
        path = os.path.join(directory, "keystore.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(key.strip() + "\n" + chain.strip() + "\n")
        _apply(listener, "ssl.keystore.key", context.load_cert_chain, path, None, password)


def _apply(listener: Listener, name: str, call, *args) -> None:
    try:
        call(*args)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"listener {listener.name}: {name}: {exc}") from None


def sasl_settings(config: BrokerConfig, listener: Listener,
                  credentials: CredentialStore) -> SaslSettings:
    mechanisms = list(config.listener_value(listener.name, "sasl.enabled.mechanisms"))
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        text = config.jaas_config(listener.name, "PLAIN") or ""
        try:
            for module in parse_jaas_config(text):
                users.update(module.users())
        except JaasError as exc:
            raise ConfigError(f"listener.name.{listener.name.lower()}.plain.sasl.jaas.config: {exc}") from None
    max_reauth_ms = {mechanism: config.max_reauth_ms(listener.name, mechanism) for mechanism in mechanisms}
    settings = SaslSettings(mechanisms, users, credentials.get, secrets.token_bytes(32), max_reauth_ms)
    if "OAUTHBEARER" in mechanisms:
        settings.oauthbearer, refresher = oauthbearer_validator(config, listener)
        if refresher is not None:
            settings.background.append(refresher.run)
    return settings


def oauthbearer_validator(config: BrokerConfig, listener: Listener) -> tuple[TokenValidator, HttpJwks | None]:
    """The listener's OAUTHBEARER validator (Kafka's
    sasl.server.callback.handler.class: unsecured tokens by default, signed
    JWTs against a JWKS), and the JWKS endpoint to keep refreshing if any.
    Reads the JWKS file or URL now: a bad one fails the start."""
    prefix = f"listener.name.{listener.name.lower()}.oauthbearer."
    try:
        modules = parse_jaas_config(config.jaas_config(listener.name, "OAUTHBEARER") or "")
    except JaasError as exc:
        raise ConfigError(f"{prefix}sasl.jaas.config: {exc}") from None
    if len(modules) != 1:
        raise ConfigError(f"{prefix}sasl.jaas.config: Must supply exactly 1 non-null JAAS mechanism "
                          f"configuration (size was {len(modules)})")

    def value(name: str) -> Any:
        return config.mechanism_value(listener.name, "OAUTHBEARER", name)
    if value(CALLBACK_HANDLER_KEY) not in JWT_VALIDATOR_CLASSES:
        if value("sasl.oauthbearer.jwks.endpoint.url") is not None:
            log.warning("listener %s validates unsecured OAUTHBEARER tokens (Kafka's default), not against "
                        "sasl.oauthbearer.jwks.endpoint.url: set %s%s=%s to check signed tokens",
                        listener.name, prefix, CALLBACK_HANDLER_KEY, JWT_VALIDATOR_CLASSES[0])
        try:
            return UnsecuredValidator(modules[0].options), None
        except OAuthBearerConfigError as exc:
            raise ConfigError(f"{prefix}sasl.jaas.config: {exc}") from None
    source = jwks_source(value("sasl.oauthbearer.jwks.endpoint.url"),
                         value("sasl.oauthbearer.jwks.endpoint.refresh.ms"),
                         value("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"),
                         value("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"))
    settings = JwtSettings(value("sasl.oauthbearer.expected.issuer"),
                           tuple(value("sasl.oauthbearer.expected.audience") or ()),
                           value("sasl.oauthbearer.scope.claim.name"), value("sasl.oauthbearer.sub.claim.name"),
                           value("sasl.oauthbearer.clock.skew.seconds"))
    return JwtValidator(source, settings), source if isinstance(source, HttpJwks) else None


def tls_principal(ssl_object: Any) -> str | None:
    """``User:<subject>`` of a verified client certificate, else None."""
    if ssl_object is None:
        return None
    try:
        certificate = ssl_object.getpeercert()
    except ValueError:  # handshake not done
        return None
    if not certificate or "subject" not in certificate:
        return None
    parts = []
    for rdn in reversed(certificate["subject"]):
        parts.append("+".join(f"{_RDN_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn))
    return "User:" + ",".join(parts)


def _escape(value: str) -> str:
    """RFC 2253 escaping of an attribute value."""
    escaped = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def inter_broker_security(config: BrokerConfig) -> ClientSecurity | None:
    """How this broker's own connections to other brokers log in on the
    inter-broker listener: TLS trusting the listener's trust store and
    presenting its key store (for ssl.client.auth=required), SASL with
    ``sasl.mechanism.inter.broker.protocol`` and the ``username`` /
    ``password`` options of that mechanism's JAAS config, as Kafka does.
    None for PLAINTEXT."""
    listener = config.inter_broker_listener()
    if listener.security_protocol == "PLAINTEXT":
        return None
    context = None
    if listener.uses_ssl:
        def value(name: str) -> Any:
            return config.listener_value(listener.name, name)
        cafile, cadata = _trust_store(listener, value)
        context = ssl.create_default_context(cafile=cafile, cadata=cadata)
        _load_key_store(context, listener, value)
    username = password = None
    mechanism = config["sasl.mechanism.inter.broker.protocol"]
    if listener.uses_sasl and mechanism == "OAUTHBEARER":
        raise ConfigError(f"sasl.mechanism.inter.broker.protocol {mechanism}: kcore brokers log in to each "
                          "other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    if listener.uses_sasl:
        if mechanism not in config.listener_value(listener.name, "sasl.enabled.mechanisms"):
            raise ConfigError(f"sasl.mechanism.inter.broker.protocol {mechanism} is not enabled on "
                              f"the inter-broker listener {listener.name}")
        text = config.jaas_config(listener.name, mechanism) or ""
        try:
            options = parse_jaas_config(text)[0].options if text else {}
        except JaasError as exc:
            raise ConfigError(f"{mechanism} JAAS config of {listener.name}: {exc}") from None
        username, password = options.get("username"), options.get("password")
        if username is None or password is None:
            raise ConfigError(
                f"the inter-broker listener {listener.name} uses SASL {mechanism}: set username and "
                f"password in listener.name.{listener.name.lower()}.{mechanism.lower()}.sasl.jaas.config")
    return ClientSecurity(listener.security_protocol, mechanism, username, password, context)

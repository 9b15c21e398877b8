"""How the kcore client secures its connections: Kafka's client settings
(``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` or
``sasl.username``/``sasl.password``, ``ssl.truststore.location`` /
``ssl.ca.location``, ``ssl.keystore.location`` / ``ssl.certificate.location``
+ ``ssl.key.location``, ``ssl.key.password``,
``ssl.endpoint.identification.algorithm``), read from a properties file as
Kafka's CLI tools read ``--command-config``.

After ApiVersions a SASL connection sends SaslHandshake v1 and then one
SaslAuthenticate per token (PLAIN: one; SCRAM: two).
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from kcore.config import parse_properties
from kcore.listener_config import SASL_MECHANISMS, SECURITY_PROTOCOLS
from kcore.security.jaas import parse_jaas_config

__all__ = ["ClientSecurity"]


@dataclass(frozen=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_file(cls, path: str | Path) -> ClientSecurity:
        return cls.from_properties(parse_properties(Path(path).read_text()))

    @classmethod
    def from_properties(cls, settings: dict[str, str]) -> ClientSecurity:
        protocol = settings.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol {protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        mechanism = settings.get("sasl.mechanism", "PLAIN").upper()
        if protocol.startswith("SASL_") and mechanism not in SASL_MECHANISMS:
            raise ValueError(f"sasl.mechanism {mechanism} is not one of {', '.join(SASL_MECHANISMS)}")
        username, password = settings.get("sasl.username"), settings.get("sasl.password")
        if "sasl.jaas.config" in settings:
            options = parse_jaas_config(settings["sasl.jaas.config"])[0].options
            username, password = options.get("username", username), options.get("password", password)
        if protocol.startswith("SASL_") and (username is None or password is None):
            raise ValueError("a SASL client needs sasl.jaas.config with username and password "
                             "(or sasl.username and sasl.password)")
        context = _ssl_context(settings) if protocol.endswith("SSL") else None
        check = settings.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
        if context is not None:
            context.check_hostname = check
        return cls(protocol, mechanism, username, password, context, check)


def _ssl_context(settings: dict[str, str]) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cafile=settings.get("ssl.truststore.location") or settings.get("ssl.ca.location"))
    if "ssl.truststore.certificates" in settings:
        context.load_verify_locations(cadata=settings["ssl.truststore.certificates"])
    keystore = settings.get("ssl.keystore.location") or settings.get("ssl.certificate.location")
    if keystore:
        context.load_cert_chain(keystore, settings.get("ssl.key.location"),
                                settings.get("ssl.key.password"))
    return context

"""A broker serving SASL/OAUTHBEARER on three listeners, as Kafka is
configured for it, for the real clients' tests:

- UNSECURED: Kafka's default validator (unsecured JWS), scope ``kafka``
  required (``unsecuredValidatorRequiredScope`` in the JAAS config);
- SIGNED: OAuthBearerValidatorCallbackHandler against a JWKS file, with an
  expected issuer and audience, and no clock skew (an expired token is
  refused the second it expires);
- FETCHED: the same against a JWKS served over http on 127.0.0.1 by the
  test (``JwksServer``), refreshed hourly (Kafka's default): every fetch
  after the first is one a token with an unknown kid started;
- POLLED: the same endpoint under another path, refreshed every second;

plus PLAINTEXT, where User:ANONYMOUS is a super user that makes topics and
ACLs. The ACL authorizer is on: what an OAUTHBEARER principal may do is
what the test grants ``User:<sub>``.
"""
from __future__ import annotations

import http.server
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcore.protocol.api_keys import ApiKey
from tests.support import BrokerProcess, free_port
from tests.support.jwt_tokens import SigningKey, claims, client_first, jwks
from tests.support.wire import WireClient

ISSUER = "https://idp.kcore.test"
AUDIENCE = "kafka"
REQUIRED_SCOPE = "kafka"
JWKS_REFRESH_MS = 1000
LISTENERS = ("PLAINTEXT", "UNSECURED", "SIGNED", "FETCHED", "POLLED")
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
JWT_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


class JwksServer:
    """A JWKS endpoint on 127.0.0.1: serves ``document`` at
    /<anything>/jwks.json and records when each GET came, per path."""

    def __init__(self, document: dict[str, Any]):
        self.document = document
        self.requests: list[tuple[str, float]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                owner.requests.append((self.path, time.monotonic()))
                body = json.dumps(owner.document).encode()
                self.send_response(200 if self.path.endswith("/jwks.json") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, directory: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/{directory}/jwks.json"

    def fetches(self, directory: str, since: float = 0.0) -> int:
        return sum(1 for path, at in list(self.requests) if path == f"/{directory}/jwks.json" and at >= since)

    def start(self) -> JwksServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class OAuthBroker:
    process: BrokerProcess
    ports: dict[str, int]
    key: SigningKey
    jwks_server: JwksServer
    extra: dict[str, str] = field(default_factory=dict)

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def token(self, sub: str = "alice", lifetime_s: float = 3600, key: SigningKey | None = None,
              **extra: Any) -> str:
        """A signed token the SIGNED and FETCHED listeners accept."""
        return (key or self.key).sign(claims(sub, lifetime_s, iss=ISSUER, aud=AUDIENCE, **extra))

    def stop(self) -> None:
        self.process.kill()
        self.jwks_server.stop()


def oauth_settings(ports: dict[str, int], jwks_file: Path, server: JwksServer) -> dict[str, str]:
    settings = {
        "listeners": ",".join(f"{name}://127.0.0.1:{ports[name]}" for name in LISTENERS),
        "listener.security.protocol.map": ",".join(
            ["PLAINTEXT:PLAINTEXT"] + [f"{name}:SASL_PLAINTEXT" for name in LISTENERS[1:]]),
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.unsecured.oauthbearer.sasl.jaas.config":
            f'{LOGIN_MODULE} unsecuredValidatorRequiredScope="{REQUIRED_SCOPE}";',
        "authorizer.class.name": "kcore", "super.users": "User:ANONYMOUS",
        "http.listeners": "", "group.initial.rebalance.delay.ms": "0", "num.partitions": "1",
        # Refusals are answered at once: these tests refuse tokens on purpose.
        "connection.failed.authentication.delay.ms": "0",
    }
    for listener, url in (("signed", jwks_file.as_uri()), ("fetched", server.url("fetched")),
                          ("polled", server.url("polled"))):
        prefix = f"listener.name.{listener}.oauthbearer."
        settings.update({
            prefix + "sasl.jaas.config": LOGIN_MODULE + ";",
            prefix + "sasl.server.callback.handler.class": JWT_HANDLER,
            prefix + "sasl.oauthbearer.jwks.endpoint.url": url,
            prefix + "sasl.oauthbearer.expected.issuer": ISSUER,
            prefix + "sasl.oauthbearer.expected.audience": AUDIENCE,
            prefix + "sasl.oauthbearer.clock.skew.seconds": "0",
        })
    settings["listener.name.polled.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms"] = str(JWKS_REFRESH_MS)
    return settings


def start_oauth_broker(directory: Path, key: SigningKey, extra: dict[str, str] | None = None) -> OAuthBroker:
    directory.mkdir(parents=True, exist_ok=True)
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(key)))
    server = JwksServer(jwks(key)).start()
    ports = {name: free_port() for name in LISTENERS}
    settings = {**oauth_settings(ports, jwks_file, server), **(extra or {})}
    try:
        process = BrokerProcess(directory / "data", settings, port=ports["PLAINTEXT"]).start()
    except Exception:
        server.stop()
        raise
    return OAuthBroker(process, ports, key, server, extra or {})


def oauth_login(client: WireClient, token: str, authenticate_version: int = 1, **extensions: str):
    """SaslHandshake v1 then RFC 7628's client message: (the answer to it,
    the answer to the client's ^A after an error challenge or None)."""
    handshake = client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
    assert handshake is not None and handshake.error_code == 0, handshake
    return authenticate(client, client_first(token, **extensions), authenticate_version)


def authenticate(client: WireClient, message: bytes, version: int = 1):
    first = client.request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": message})
    if first is None or first.error_code != 0 or not first.auth_bytes:
        return first, None
    return first, client.request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": b"\x01"})

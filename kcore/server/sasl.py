"""The SASL exchange of one connection on a SASL_PLAINTEXT/SASL_SSL
listener, run before any other request is served (Kafka's
SaslServerAuthenticator).

States, in order:
    HANDSHAKE     ApiVersions and SaslHandshake only
    AUTHENTICATE  SaslHandshake v1 chose a mechanism: SaslAuthenticate requests
    RAW           SaslHandshake v0 chose one: the next frames are bare SASL
                  tokens (no request header), each answered by a bare token
    COMPLETE      the principal is known; every request is served
Anything else before COMPLETE closes the connection, as do a failure and an
unsupported mechanism once their answer is out.

Until COMPLETE, frames are limited to ``sasl.server.max.receive.size``
(Kafka's 512 KiB), so an unauthenticated peer cannot make the broker
allocate ``socket.request.max.bytes``.

Brute force is bounded per client address (``AuthFailures``): every
failure is answered ``connection.failed.authentication.delay.ms`` late (as
Kafka does), and while an address has failed recently its authentication
steps run one at a time, the next one no sooner than a delay after the
last refusal, doubled per failure up to ``MAX_DELAY_S``. Other addresses never wait, nor do connections already
authenticated. A success from the address clears its record: the client
that failed has its password right now, while a guesser without any valid
credentials stays bounded.

Not thread-safe: owned by the connection's event loop.
"""
from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.plain import PlainServer
from kcore.security.scram import AuthenticationFailed, CredentialLookup, ScramServer

SASL_SERVER_MAX_RECEIVE_SIZE = 524288  # Kafka's sasl.server.max.receive.size default
MAX_DELAY_S = 5.0  # 12 guesses a minute per address at worst
FORGET_AFTER_S = 60.0  # an address without failures this long starts afresh


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    RAW = "raw"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass
class SaslSettings:
    """What a SASL listener offers (kcore.server.security builds it)."""

    mechanisms: list[str]
    plain_users: dict[str, str]
    lookup: CredentialLookup
    decoy_key: bytes


class AuthFailures:
    """Failed authentications per client address (see module doc). One per
    broker; not thread-safe."""

    def __init__(self, delay_ms: int):
        self.delay_s = delay_ms / 1000
        self._failures: dict[str, tuple[int, float]] = {}  # host -> (count, last failure)
        self._next_slot: dict[str, float] = {}

    async def wait_turn(self, host: str) -> None:
        count = self._count(host)
        if count == 0 or self.delay_s == 0:
            return
        now = time.monotonic()
        slot = max(now, self._next_slot.get(host, now))
        self._next_slot[host] = slot + self._spacing(count)
        if slot > now:
            await asyncio.sleep(slot - now)

    def failed(self, host: str) -> float:
        """Record a failure; the seconds its answer waits. The address's
        next attempt may start only ``_spacing`` after that answer."""
        count = self._count(host) + 1
        now = time.monotonic()
        self._failures[host] = (count, now)
        self._next_slot[host] = max(self._next_slot.get(host, now), now + self.delay_s + self._spacing(count))
        if len(self._failures) > 10000:  # bounded memory under a scan of many addresses
            oldest = min(self._failures, key=lambda h: self._failures[h][1])
            self._failures.pop(oldest)
            self._next_slot.pop(oldest, None)
        return self.delay_s

    def succeeded(self, host: str) -> None:
        self._failures.pop(host, None)
        self._next_slot.pop(host, None)

    def _count(self, host: str) -> int:
        count, last = self._failures.get(host, (0, 0.0))
        if count and time.monotonic() - last > FORGET_AFTER_S:
            self._failures.pop(host, None)
            self._next_slot.pop(host, None)
            return 0
        return count

    def _spacing(self, count: int) -> float:
        return min(self.delay_s * 2 ** (count - 1), MAX_DELAY_S)


class SaslAuthenticator:
    """One connection's exchange (see module doc)."""

    def __init__(self, settings: SaslSettings, failures: AuthFailures, host: str):
        self._settings = settings
        self._failures = failures
        self._host = host
        self.state = SaslState.HANDSHAKE
        self._server: PlainServer | ScramServer | None = None
        self.user: str | None = None

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request of this key may come now (before COMPLETE)."""
        if api_key == ApiKey.API_VERSIONS:
            return self.state is SaslState.HANDSHAKE
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self.state is SaslState.HANDSHAKE
        if api_key == ApiKey.SASL_AUTHENTICATE:
            return self.state is SaslState.AUTHENTICATE
        return False

    def handshake(self, api_version: int, mechanism: str) -> tuple[dict, bool]:
        """(SaslHandshake response body, close after sending it)."""
        enabled = self._settings.mechanisms
        if mechanism not in enabled:
            self.state = SaslState.FAILED
            return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}, True
        if mechanism == "PLAIN":
            self._server = PlainServer(self._settings.plain_users)
        else:
            self._server = ScramServer(mechanism, self._settings.lookup, self._settings.decoy_key)
        self.state = SaslState.AUTHENTICATE if api_version >= 1 else SaslState.RAW
        return {"error_code": ErrorCode.NONE, "mechanisms": enabled}, False

    async def authenticate(self, token: bytes) -> tuple[bytes, str | None]:
        """Evaluate one client token: (server token, None) or, on failure,
        (b"", the reason) once the failure delay has passed."""
        assert self._server is not None
        await self._failures.wait_turn(self._host)
        try:
            answer = await self._server.evaluate(bytes(token))
        except AuthenticationFailed as exc:
            self.state = SaslState.FAILED
            await asyncio.sleep(self._failures.failed(self._host))
            return b"", str(exc)
        if self._server.complete:
            self.user = self._server.user
            self.state = SaslState.COMPLETE
            self._failures.succeeded(self._host)
        return answer, None

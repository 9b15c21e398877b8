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

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0 for
the mechanism, or an OAUTHBEARER token (which expires), a completed
exchange has a session lifetime, sent in SaslAuthenticate v1+ and kept as
``session_expires`` (monotonic seconds): the setting, the time left to the
token's expiry, or the smaller of both (Kafka's SaslServerAuthenticator).
The connection then takes a SaslHandshake as the start of a new exchange
(a new authenticator with ``previous`` set, at most one a second as in
Kafka's KafkaChannel); it must use the same mechanism and end with the
same user, or it fails as a refused authentication does. A connection
whose session expired is closed on its next request other than
SaslHandshake (Kafka's SocketServer); a client that never re-authenticates
is cut off that way.

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
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.oauthbearer import InvalidClientMessage, OAuthBearerServer, TokenValidator
from kcore.security.plain import PlainServer
from kcore.security.scram import AuthenticationFailed, CredentialLookup, ScramServer

log = logging.getLogger(__name__)

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
    # connections.max.reauth.ms per mechanism; 0: sessions never expire.
    max_reauth_ms: dict[str, int] = field(default_factory=dict)
    # OAUTHBEARER's token validator, when the listener enables it.
    oauthbearer: TokenValidator | None = None
    # What runs on the broker's loop while it serves (a JWKS refresh).
    background: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    # Epoch seconds, for the time left to a token's expiry.
    wall_clock: Callable[[], float] = time.time


@dataclass(frozen=True)
class Session:
    """Who authenticated, how, and until when (monotonic seconds, None:
    forever)."""

    mechanism: str
    user: str
    expires: float | None

    def expired(self, now: float) -> bool:
        return self.expires is not None and now > self.expires


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
    """One exchange of one connection (see module doc): the first, or a
    re-authentication of the ``previous`` session."""

    def __init__(self, settings: SaslSettings, failures: AuthFailures, host: str,
                 previous: Session | None = None):
        self._settings = settings
        self._failures = failures
        self._host = host
        self.previous = previous
        self.state = SaslState.HANDSHAKE
        self._server: PlainServer | ScramServer | OAuthBearerServer | None = None
        self._mechanism: str | None = None
        self.user: str | None = None
        self.session: Session | None = None  # set once COMPLETE
        self.session_lifetime_ms = 0

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request of this key may come now (before COMPLETE)."""
        if api_key == ApiKey.API_VERSIONS:
            return self.state is SaslState.HANDSHAKE and self.previous is None
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
        elif mechanism == "OAUTHBEARER":
            assert self._settings.oauthbearer is not None
            self._server = OAuthBearerServer(self._settings.oauthbearer)
        else:
            self._server = ScramServer(mechanism, self._settings.lookup, self._settings.decoy_key)
        self._mechanism = mechanism
        self.state = SaslState.AUTHENTICATE if api_version >= 1 else SaslState.RAW
        return {"error_code": ErrorCode.NONE, "mechanisms": enabled}, False

    async def authenticate(self, token: bytes) -> tuple[bytes, str | None]:
        """Evaluate one client token: (server token, None) or, on failure,
        (b"", the reason) once the failure delay has passed."""
        assert self._server is not None and self._mechanism is not None
        await self._failures.wait_turn(self._host)
        try:
            self._check_mechanism_unchanged()
            answer = await self._server.evaluate(bytes(token))
            if self._server.complete:
                self._check_user_unchanged(self._server.user)
        except InvalidClientMessage as exc:
            # Kafka tells the client nothing of a malformed message (a
            # SaslException's text may say who exists); the log says what.
            log.info("%s from %s: %s", self._mechanism, self._host, exc)
            self.state = SaslState.FAILED
            await asyncio.sleep(self._failures.failed(self._host))
            step = "re-authentication" if self.previous is not None else "authentication"
            return b"", f"Authentication failed during {step} due to invalid credentials with SASL mechanism " \
                f"{self._mechanism}"
        except AuthenticationFailed as exc:
            self.state = SaslState.FAILED
            await asyncio.sleep(self._failures.failed(self._host))
            return b"", str(exc)
        if self._server.complete:
            self._complete(self._mechanism)
        return answer, None

    def _complete(self, mechanism: str) -> None:
        assert self._server is not None and self._server.user is not None
        user = self.user = self._server.user
        self.state = SaslState.COMPLETE
        max_reauth_ms = self._settings.max_reauth_ms.get(mechanism, 0)
        credential_ms = None
        if isinstance(self._server, OAuthBearerServer) and self._server.token is not None:
            credential_ms = self._server.token.lifetime_ms - int(self._settings.wall_clock() * 1000)
        expires = None
        if credential_ms is not None or max_reauth_ms > 0:
            lifetimes = [ms for ms in (credential_ms, max_reauth_ms if max_reauth_ms > 0 else None)
                         if ms is not None]
            self.session_lifetime_ms = max(0, min(lifetimes))
            expires = time.monotonic() + self.session_lifetime_ms / 1000
        self.session = Session(mechanism, user, expires)
        self._failures.succeeded(self._host)

    def _check_mechanism_unchanged(self) -> None:
        previous = self.previous
        if previous is not None and previous.mechanism != self._mechanism:
            raise AuthenticationFailed(
                f"SASL mechanism '{self._mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{previous.mechanism}'")

    def _check_user_unchanged(self, user: str | None) -> None:
        previous = self.previous
        if previous is not None and previous.user != user:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from User:{previous.user}: "
                f"User:{user}")

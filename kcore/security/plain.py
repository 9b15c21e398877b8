"""SASL PLAIN (RFC 4616): one message ``authzid NUL authcid NUL passwd``,
checked against the ``user_<name>`` options of PlainLoginModule's JAAS
config. The authzid may be empty or the user name itself (Kafka refuses
acting as another user). Meant for TLS listeners: the password crosses the
wire.
"""
from __future__ import annotations

import hmac

from kcore.security.scram import AuthenticationFailed


class PlainServer:
    """One PLAIN exchange: a single evaluate."""

    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]):
        self._users = users
        self.user: str | None = None
        self.complete = False

    async def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3 or not parts[1] or not parts[2]:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 NUL-separated tokens")
        try:
            authzid, user, password = (part.decode("utf-8") for part in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id "
                                       "that is different from username")
        expected = self._users.get(user)
        # compare_digest on both branches keeps an unknown user as slow as a wrong password.
        matches = hmac.compare_digest(password.encode(), (expected or "\0").encode())
        if expected is None or not matches:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.user = user
        self.complete = True
        return b""

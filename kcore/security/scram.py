"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials and
the server side of the exchange, sans-io.

A credential is what Kafka stores per user and mechanism (ScramCredential):
``salt``, ``stored_key = H(HMAC(SaltedPassword, "Client Key"))``,
``server_key = HMAC(SaltedPassword, "Server Key"))`` and ``iterations``,
with ``SaltedPassword = PBKDF2-HMAC(password, salt, iterations)``; the
password itself is never kept. Text form (Kafka's ScramCredentialUtils, as
in ZooKeeper's /config/users): ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``.

The exchange, one ``evaluate`` per client message:
    client-first  ``n,,n=<user>,r=<client nonce>``
    server-first  ``r=<client nonce><server nonce>,s=<b64 salt>,i=<iterations>``
    client-final  ``c=<b64 gs2 header>,r=<nonce>,p=<b64 ClientProof>``
    server-final  ``v=<b64 ServerSignature>``
An unknown user gets a made-up salt and goes on to fail at the proof, so
the answer does not tell who exists (RFC 5802 section 5.1).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

# Kafka's ScramMechanism: name, hash, the int8 of AlterUserScramCredentials,
# and the iteration bounds it accepts (4096 = RFC 7677's minimum).
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
MECHANISM_OF_TYPE = {type_id: name for name, (_, type_id) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
SALT_BYTES = 32


class AuthenticationFailed(Exception):
    """The client's message is malformed or its proof is wrong; the text is
    what the client is told."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        return (f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
                f"server_key={_b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(","))
        return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                   base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes,
                           iterations: int) -> ScramCredential:
    digest = MECHANISMS[mechanism][0]
    client_key = hmac.digest(salted, b"Client Key", digest)
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           hmac.digest(salted, b"Server Key", digest), iterations)


def new_credential(mechanism: str, password: str,
                   iterations: int = MIN_ITERATIONS) -> ScramCredential:
    salt = secrets.token_bytes(SALT_BYTES)
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations),
                                  salt, iterations)


CredentialLookup = Callable[[str, str], Awaitable[ScramCredential | None]]


class ScramServer:
    """One SCRAM exchange (see module doc). Not reusable: a connection that
    fails is closed."""

    def __init__(self, mechanism: str, lookup: CredentialLookup, decoy_key: bytes,
                 server_nonce: str | None = None):
        self.mechanism = mechanism
        self._server_nonce = server_nonce or secrets.token_urlsafe(24)  # fixed only by tests
        self._digest = MECHANISMS[mechanism][0]
        self._lookup = lookup
        self._decoy_key = decoy_key  # per-broker secret behind unknown users' salts
        self._credential: ScramCredential | None = None
        self._known_user = False
        self._gs2_header = ""
        self._nonce = ""
        self._first_bare = ""
        self._server_first = ""
        self.user: str | None = None  # set once the exchange succeeded
        self.complete = False

    async def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("SCRAM exchange already complete")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM message is not UTF-8") from None
        if not self._nonce:
            return (await self._client_first(text)).encode()
        return self._client_final(text).encode()

    async def _client_first(self, text: str) -> str:
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or (parts[1] and not parts[1].startswith("a=")):
            raise AuthenticationFailed("invalid SCRAM client-first message (channel binding is not supported)")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._first_bare = parts[2]
        attributes = _attributes(self._first_bare)
        user, client_nonce = attributes.get("n"), attributes.get("r")
        if not user or not client_nonce or "m" in attributes:
            raise AuthenticationFailed("invalid SCRAM client-first message")
        user = _saslname(user)
        if parts[1] and _saslname(parts[1][2:]) != user:
            raise AuthenticationFailed("SCRAM authorization id differs from the user name")
        credential = await self._lookup(user, self.mechanism)
        self._known_user = credential is not None
        self._credential = credential or self._decoy(user)
        self.user = user
        self._nonce = client_nonce + self._server_nonce
        self._server_first = (f"r={self._nonce},s={_b64(self._credential.salt)},"
                              f"i={self._credential.iterations}")
        return self._server_first

    def _client_final(self, text: str) -> str:
        attributes = _attributes(text)
        proof_text, binding, nonce = attributes.get("p"), attributes.get("c"), attributes.get("r")
        if proof_text is None or binding is None or nonce is None or not text.endswith(",p=" + proof_text):
            self.user = None
            raise AuthenticationFailed("invalid SCRAM client-final message")
        # librdkafka before 2.6.1 sends the client nonce twice (client nonce +
        # the full nonce); Kafka 3.8.1+ accepts a nonce that ends with the
        # exchange's, which still carries this server's fresh part.
        if not nonce.endswith(self._nonce):
            self.user = None
            raise AuthenticationFailed("SCRAM nonce does not match this exchange")
        if binding != _b64(self._gs2_header.encode()):
            self.user = None
            raise AuthenticationFailed("SCRAM channel binding does not match the client-first message")
        assert self._credential is not None
        without_proof = text[:-len(",p=" + proof_text)]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except binascii.Error:
            proof = b""
        signature = hmac.digest(self._credential.stored_key, auth_message, self._digest)
        valid = len(proof) == len(signature) and self._known_user and hmac.compare_digest(
            hashlib.new(self._digest, bytes(a ^ b for a, b in zip(proof, signature))).digest(),
            self._credential.stored_key)
        if not valid:
            self.user = None
            raise AuthenticationFailed(
                f"Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}")
        self.complete = True
        return "v=" + _b64(hmac.digest(self._credential.server_key, auth_message, self._digest))

    def _decoy(self, user: str) -> ScramCredential:
        salt = hmac.digest(self._decoy_key, user.encode(), "sha256")
        return ScramCredential(salt, secrets.token_bytes(32), secrets.token_bytes(32), MIN_ITERATIONS)


def _attributes(text: str) -> dict[str, str]:
    """``a=1,b=2`` -> {a: 1, b: 2}; a part without ``x=`` is malformed."""
    result: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise AuthenticationFailed("malformed SCRAM attribute")
        result.setdefault(part[0], part[2:])
    return result


def _saslname(text: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ',' and ``=3D`` is '='; any other '=' is
    malformed."""
    decoded = text.replace("=2C", ",").replace("=3D", "=")
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise AuthenticationFailed("malformed SCRAM user name")
    return decoded


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class ScramClient:
    """The client side of one exchange (the kcore client and the broker's
    own inter-broker login): ``first()``, ``final(server_first)``, then
    ``verify(server_final)``."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None):
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism][0]
        self._user = user.replace("=", "=3D").replace(",", "=2C")
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)  # fixed only by tests
        self._first_bare = f"n={self._user},r={self._nonce}"
        self._auth_message = b""
        self._server_key = b""

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attributes = _attributes(text)
        nonce, salt, iterations = attributes.get("r", ""), attributes.get("s"), attributes.get("i")
        if not nonce.startswith(self._nonce) or salt is None or iterations is None:
            raise AuthenticationFailed("invalid SCRAM server-first message")
        salted = salted_password(self.mechanism, self._password, base64.b64decode(salt),
                                 int(iterations))
        client_key = hmac.digest(salted, b"Client Key", self._digest)
        stored_key = hashlib.new(self._digest, client_key).digest()
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, self._auth_message, self._digest)
        self._server_key = hmac.digest(salted, b"Server Key", self._digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        expected = "v=" + _b64(hmac.digest(self._server_key, self._auth_message, self._digest))
        if not hmac.compare_digest(server_final.decode(errors="replace"), expected):
            raise AuthenticationFailed("the broker's SCRAM signature is wrong")

"""JWTs and JSON Web Key Sets made for tests with `cryptography` alone
(RFC 7515 compact JWS, RFC 7518 RS256/ES256, RFC 7517 public keys), so the
tokens the broker checks with PyJWT come from an independent writer; and
unsecured tokens as Kafka's and librdkafka's builders write them
(``{"alg":"none"}``, empty signature)."""
from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(value: int, size: int | None = None) -> str:
    size = size or max(1, (value.bit_length() + 7) // 8)
    return b64url(value.to_bytes(size, "big"))


def _segment(value: dict[str, Any]) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


@dataclass
class SigningKey:
    """A private key that signs JWS, and its public JWK."""

    kid: str | None
    alg: str
    private_key: Any = field(repr=False)

    def jwk(self, **extra: Any) -> dict[str, Any]:
        public = self.private_key.public_key().public_numbers()
        if self.alg == "RS256":
            key = {"kty": "RSA", "n": _uint(public.n), "e": _uint(public.e)}
        else:
            key = {"kty": "EC", "crv": "P-256", "x": _uint(public.x, 32), "y": _uint(public.y, 32)}
        if self.kid is not None:
            key["kid"] = self.kid
        return {**key, "use": "sig", "alg": self.alg, **extra}

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        head = {"alg": self.alg, "typ": "JWT", **({"kid": self.kid} if self.kid else {}), **header}
        signing_input = f"{_segment(head)}.{_segment(claims)}".encode()
        if self.alg == "RS256":
            signature = self.private_key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.private_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")  # RFC 7518 section 3.4
        return f"{signing_input.decode()}.{b64url(signature)}"


def rsa_key(kid: str | None = "rsa-1") -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str | None = "ec-1") -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def jwks(*keys: SigningKey) -> dict[str, Any]:
    return {"keys": [key.jwk() for key in keys]}


def claims(sub: str, lifetime_s: float = 3600, now: float | None = None, **extra: Any) -> dict[str, Any]:
    """iat now and exp ``lifetime_s`` later, whole seconds as issuers write them."""
    issued = int(time.time() if now is None else now)
    return {"sub": sub, "iat": issued, "exp": issued + int(lifetime_s), **extra}


def unsecured_token(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    return f"{_segment(header or {'alg': 'none'})}.{_segment(claims)}."


def client_first(token: str, authzid: str = "", **extensions: str) -> bytes:
    """RFC 7628's client message, as Kafka's OAuthBearerClientInitialResponse writes it."""
    pairs = "".join(f"\x01{key}={value}" for key, value in extensions.items())
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}{pairs}\x01\x01".encode()

"""Signed JWTs against a JSON Web Key Set, as Kafka's BrokerJwtValidator
(jose4j) checks them. Tokens and keys come from tests/support/jwt_tokens.py,
written with `cryptography` alone, not with the PyJWT the broker uses."""
from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from kcore.security.jwks import JsonWebKeySet, JwksError, JwtSettings, JwtValidator
from kcore.security.oauthbearer import TokenRejected
from tests.support.jwt_tokens import b64url, claims, ec_key, jwks, rsa_key, unsecured_token

NOW = 1_700_000_000
RSA, EC = rsa_key("rsa-1"), ec_key("ec-1")


class Keys:
    """A fixed key set that records the key ids it was asked for in vain."""

    def __init__(self, document: dict):
        self.keys = JsonWebKeySet.parse(json.dumps(document))
        self.not_found: list[str | None] = []

    def key_set(self) -> JsonWebKeySet:
        return self.keys

    def key_not_found(self, kid: str | None) -> None:
        self.not_found.append(kid)


def validator(document: dict | None = None, now: float = NOW, **settings) -> JwtValidator:
    return JwtValidator(Keys(document or jwks(RSA, EC)), JwtSettings(**settings), clock=lambda: now)


@pytest.mark.parametrize("key", [RSA, EC], ids=["RS256", "ES256"])
def test_signed_token_gives_sub_scope_and_expiry(key):
    token = validator().validate(key.sign(claims("alice", 60, now=NOW, scope=["read", "write"])))
    assert token.principal_name == "alice"
    assert token.scope == {"read", "write"}
    assert (token.lifetime_ms, token.start_time_ms) == ((NOW + 60) * 1000, NOW * 1000)


def test_issuer_audience_and_claim_names_as_configured():
    checked = validator(expected_issuer="https://idp.example", expected_audience=("kafka", "other"),
                        scope_claim_name="scp", sub_claim_name="client_id")
    token = checked.validate(RSA.sign({"client_id": " svc ", "iss": "https://idp.example", "aud": ["x", "kafka"],
                                       "iat": NOW, "exp": NOW + 60, "scp": "produce"}))
    assert (token.principal_name, token.scope) == ("svc", {"produce"})


def test_clock_skew_is_jose4js_on_exp_and_nbf():
    """Valid until exp + skew (exclusive), from nbf - skew; 30 s by default."""
    token = RSA.sign({"sub": "alice", "iat": NOW - 100, "exp": NOW - 29, "nbf": NOW + 30})
    assert validator().validate(token).principal_name == "alice"
    with pytest.raises(TokenRejected, match="no longer valid"):
        validator(now=NOW + 1).validate(token)
    with pytest.raises(TokenRejected, match="not yet valid"):
        validator(now=NOW - 60).validate(RSA.sign({"sub": "alice", "iat": NOW - 100, "exp": NOW + 60,
                                                   "nbf": NOW - 29}))
    with pytest.raises(TokenRejected, match="no longer valid"):
        validator(clock_skew_seconds=0).validate(RSA.sign(claims("alice", 0, now=NOW)))


OTHER = rsa_key("rsa-1")  # another key under the same kid: a forged signature


@pytest.mark.parametrize("token, settings, reason", [
    (OTHER.sign(claims("alice", 60, now=NOW)), {}, "no key of kid 'rsa-1' verifies"),
    (RSA.sign(claims("alice", 60, now=NOW))[:-4] + "AAAA", {}, "verifies its signature"),
    (rsa_key("rsa-2").sign(claims("alice", 60, now=NOW)), {}, "Unable to find a suitable verification key"),
    (RSA.sign(claims("alice", 60, now=NOW), alg="RS384"), {}, "verification key"),  # the JWK says RS256
    (unsecured_token(claims("alice", 60, now=NOW)), {}, "three sections"),
    (unsecured_token(claims("alice", 60, now=NOW)) + "c2ln", {}, "algorithm 'none' is not allowed"),
    ("", {}, "Empty JWT"),
    ("a.b", {}, "but 2 sections"),
    ("a. .c", {}, "payload section missing"),
    ("e30.e30.e30", {}, "algorithm None is not allowed"),
    ("!!!.e30.e30", {}, "Could not validate"),
    (RSA.sign(claims("alice", 60, now=NOW), alg="XS1"), {}, "unknown algorithm XS1"),
    (RSA.sign({"sub": "alice", "iat": NOW}), {}, 'Token is missing the "exp" claim'),
    (RSA.sign({"sub": "alice", "exp": NOW + 60}), {}, 'Token is missing the "iat" claim'),
    (RSA.sign({"sub": "alice", "iat": NOW, "exp": "later"}), {}, "'exp' claim"),
    (RSA.sign({"iat": NOW, "exp": NOW + 60}), {}, "claim sub must be non-null"),
    (RSA.sign({"sub": 5, "iat": NOW, "exp": NOW + 60}), {}, "Subject must be a string"),
    (RSA.sign(claims("alice", 60, now=NOW, email=5)), {"sub_claim_name": "email"}, "'email' claim"),
    (RSA.sign(claims("alice", 60, now=NOW, scope=["a", "a "])), {}, "must not contain duplicates"),
    (RSA.sign(claims("alice", 60, now=NOW, scope=["a", " "])), {}, "claim scope must be non-null"),
    (RSA.sign(claims("alice", 60, now=NOW, iss="https://evil.example")), {"expected_issuer": "https://idp.example"},
     "Invalid issuer"),
    (RSA.sign(claims("alice", 60, now=NOW, iss="https://idp.example.evil")),
     {"expected_issuer": "https://idp.example"}, "Invalid issuer"),
    # A part of the expected issuer is not the issuer (PyJWT 2.10.0 took it: CVE-2024-53861).
    (RSA.sign(claims("alice", 60, now=NOW, iss="idp")), {"expected_issuer": "https://idp.example"}, "Invalid issuer"),
    (RSA.sign(claims("alice", 60, now=NOW)), {"expected_issuer": "https://idp.example"}, 'missing the "iss"'),
    (RSA.sign(claims("alice", 60, now=NOW, aud="other")), {"expected_audience": ("kafka",)}, "Audience doesn't match"),
    (RSA.sign(claims("alice", 60, now=NOW)), {"expected_audience": ("kafka",)}, 'missing the "aud"'),
    # jose4j's default audience check, which Kafka keeps: an aud nobody expects.
    (RSA.sign(claims("alice", 60, now=NOW, aud="kafka")), {}, "Invalid audience"),
])
def test_tokens_kafka_refuses_are_refused_as_invalid_token(token, settings, reason):
    with pytest.raises(TokenRejected, match=reason) as refused:
        validator(**settings).validate(token)
    assert refused.value.challenge() == '{"status":"invalid_token"}'


def test_unknown_kid_is_reported_to_the_key_source():
    keys = Keys(jwks(RSA))
    checked = JwtValidator(keys, JwtSettings(), clock=lambda: NOW)
    with pytest.raises(TokenRejected):
        checked.validate(ec_key("ec-9").sign(claims("alice", 60, now=NOW)))
    assert keys.not_found == ["ec-9"]


def test_hmac_token_signed_with_the_rsa_public_key_is_refused():
    """Algorithm confusion (RFC 8725 section 2.1): an RSA JWK never verifies HS256."""
    public_pem_like = json.dumps(RSA.jwk()).encode()
    header, body = b64url(b'{"alg":"HS256","kid":"rsa-1"}'), b64url(json.dumps(claims("alice", 60, now=NOW)).encode())
    signature = hmac.new(public_pem_like, f"{header}.{body}".encode(), hashlib.sha256).digest()
    with pytest.raises(TokenRejected, match="verification key"):
        validator().validate(f"{header}.{body}.{b64url(signature)}")


def test_key_choice_follows_kid_kty_use_and_alg():
    unnamed = rsa_key(None)
    document = {"keys": [RSA.jwk(use="enc"), EC.jwk(alg="ES384"), unnamed.jwk(), rsa_key("x").jwk()]}
    keys = JsonWebKeySet.parse(json.dumps(document))
    assert keys.candidates("rsa-1", "RS256") == []  # an encryption key
    assert keys.candidates("ec-1", "ES256") == []  # meant for another algorithm
    assert len(keys.candidates(None, "RS256")) == 2  # no kid: every RSA signing key is tried
    # A token without a kid is verified by whichever key signed it.
    checked = validator(document)
    assert checked.validate(unnamed.sign(claims("alice", 60, now=NOW))).principal_name == "alice"


@pytest.mark.parametrize("document, reason", [
    (b"not json", "not JSON"), (b"[]", '"keys" array'), (b'{"keys": {}}', '"keys" array'), (b"\xff", "not JSON"),
])
def test_a_document_that_is_no_key_set_is_an_error(document, reason):
    with pytest.raises(JwksError, match=reason):
        JsonWebKeySet.parse(document)


def test_keys_kcore_cannot_use_are_left_out():
    keys = JsonWebKeySet.parse(json.dumps({"keys": [{"kty": "XYZ"}, "text", {"kty": "RSA", "kid": 5},
                                                    RSA.jwk(), {"kty": "RSA", "kid": "broken", "n": "@"}]}))
    assert keys.key_ids() == ["rsa-1", "broken"]
    assert keys.candidates("broken", "RS256") == []  # its modulus does not decode
    assert len(keys.candidates("rsa-1", "RS256")) == 1

"""SASL/OAUTHBEARER's model: RFC 7628's client message as Kafka's
OAuthBearerClientInitialResponse parses it, the error challenge of
OAuthBearerSaslServer, and Kafka's unsecured token validator
(OAuthBearerUnsecuredValidatorCallbackHandler), each rule with a clock the
test sets."""
from __future__ import annotations

import asyncio

import pytest

from kcore.security.oauthbearer import (
    InvalidClientMessage,
    OAuthBearerConfigError,
    OAuthBearerServer,
    TokenRejected,
    UnsecuredValidator,
    parse_client_initial_response,
)
from kcore.security.scram import AuthenticationFailed
from tests.support.jwt_tokens import claims, client_first, unsecured_token

NOW = 1_700_000_000.0


def validator(**options: str) -> UnsecuredValidator:
    return UnsecuredValidator(options, clock=lambda: NOW)


def test_client_message_gives_token_authzid_and_extensions():
    message = parse_client_initial_response(client_first("abc.def.", "alice", traceId="x=1 y", logicalCluster="lc"))
    assert (message.token, message.authorization_id) == ("abc.def.", "alice")
    assert message.extensions == {"traceId": "x=1 y", "logicalCluster": "lc"}
    assert parse_client_initial_response(b"n,,\x01auth=bEaReR   t0k-en_.\x01\x01").token == "t0k-en_."


@pytest.mark.parametrize("message, reason", [
    # RFC 7628 section 4.1's own example: its token ends in base64 padding,
    # which Kafka's token grammar ([-_.a-zA-Z0-9]+) refuses.
    (b"n,a=user@example.com,\x01host=server.example.com\x01port=143\x01"
     b"auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01", "invalid 'auth' format"),
    (b"n,,\x01host=example\x01\x01", "'auth' not specified"),
    (b"n,,\x01auth=Basic dXNlcg\x01\x01", "Invalid scheme in OAUTHBEARER client first message: Basic"),
    (b"n,,\x01auth=Bearer\x01\x01", "invalid 'auth' format"),
    (b"n,,\x01auth=Bearer abc\x01", "Invalid OAUTHBEARER client first message"),  # one ^A short
    (b"y,,\x01auth=Bearer abc\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,a=a,b,\x01auth=Bearer abc\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Bearer abc\x01bad-key=1\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Bearer \xff\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"", "Invalid OAUTHBEARER client first message"),
])
def test_malformed_client_messages_are_refused_as_kafka_refuses_them(message, reason):
    with pytest.raises(InvalidClientMessage, match=reason):
        parse_client_initial_response(message)


def run(server: OAuthBearerServer, message: bytes) -> bytes:
    return asyncio.run(server.evaluate(message))


def test_valid_unsecured_token_names_the_principal_and_lifetime():
    server = OAuthBearerServer(validator())
    token = unsecured_token(claims("alice", 60, now=NOW, scope=["a", " b "]))
    assert run(server, client_first(token)) == b""
    assert server.complete and server.user == "alice"
    assert server.token is not None
    assert (server.token.lifetime_ms, server.token.start_time_ms) == ((NOW + 60) * 1000, NOW * 1000)
    assert server.token.scope == {"a", "b"}


def test_refused_token_gets_the_json_challenge_then_fails_on_the_clients_separator():
    """RFC 7628 section 3.2.2: the server's error, the client's ^A, then failure."""
    server = OAuthBearerServer(validator())
    challenge = run(server, client_first(unsecured_token(claims("alice", -10, now=NOW))))
    assert challenge == b'{"status":"invalid_token"}'
    assert not server.complete
    with pytest.raises(AuthenticationFailed) as refused:
        run(server, b"\x01")
    assert str(refused.value) == '{"status":"invalid_token"}'


def test_missing_scope_is_insufficient_scope_with_the_required_scope():
    server = OAuthBearerServer(validator(unsecuredValidatorRequiredScope="kafka write"))
    challenge = run(server, client_first(unsecured_token(claims("alice", 60, now=NOW, scope="kafka"))))
    assert challenge == b'{"status":"insufficient_scope", "scope":"[kafka, write]"}'


def test_authzid_other_than_the_principal_is_refused():
    server = OAuthBearerServer(validator())
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(bob\).*principal name \(alice\)"):
        run(server, client_first(unsecured_token(claims("alice", 60, now=NOW)), authzid="bob"))
    assert not server.complete
    same = OAuthBearerServer(validator())
    run(same, client_first(unsecured_token(claims("alice", 60, now=NOW)), authzid="alice"))
    assert same.user == "alice"


@pytest.mark.parametrize("token, options, reason", [
    (unsecured_token(claims("alice", 60, now=NOW), {"alg": "HS256"}), {}, "must have 'none'"),
    (unsecured_token(claims("alice", 60, now=NOW), {"typ": "JWT"}), {}, "Algorithm value"),
    (unsecured_token(claims("alice", 60, now=NOW)) + "c2ln", {}, "must not contain a digital signature"),
    ("e30..", {}, "contains '..'"),
    ("e30.e30", {}, "3 dot-separated"),
    ("!!.e30.", {}, "malformed Base64"),
    ("bm90IGpzb24.e30.", {}, "malformed JSON"),
    (unsecured_token({"sub": "alice"}), {}, "No expiration time"),
    (unsecured_token({"sub": "alice", "exp": "soon"}), {}, "'exp' claim was not of type Number"),
    (unsecured_token({"exp": NOW + 60}), {}, "No principal name in JWT claim: sub"),
    (unsecured_token({"sub": "  ", "exp": NOW + 60}), {}, "No principal name"),
    (unsecured_token({"sub": 7, "exp": NOW + 60}), {}, "'sub' claim was not of type String"),
    (unsecured_token(claims("alice", 60, now=NOW)), {"unsecuredValidatorPrincipalClaimName": "email"},
     "No principal name in JWT claim: email"),
    (unsecured_token(claims("alice", 0, now=NOW)), {}, "on or after the Expiration Time"),
    (unsecured_token({"sub": "alice", "iat": NOW + 5, "exp": NOW + 60}), {}, "Issued At value"),
    (unsecured_token({"sub": "alice", "iat": NOW - 5, "exp": NOW - 6}),
     {"unsecuredValidatorAllowableClockSkewMs": "60000"}, "was not after the Issued At time"),
    (unsecured_token(claims("alice", 60, now=NOW, scope=5)), {}, "'scope' claim was not of type List"),
    (unsecured_token(claims("alice", 60, now=NOW, roles="kafka")),
     {"unsecuredValidatorRequiredScope": "kafka", "unsecuredValidatorScopeClaimName": "scp"},
     "missing a required scope"),
])
def test_unsecured_validator_refuses_what_kafkas_refuses(token, options, reason):
    with pytest.raises(TokenRejected, match=reason):
        validator(**options).validate(token)


def test_unsecured_validator_clock_skew_and_custom_claims():
    checked = validator(unsecuredValidatorPrincipalClaimName="email", unsecuredValidatorScopeClaimName="scp",
                        unsecuredValidatorRequiredScope="kafka", unsecuredValidatorAllowableClockSkewMs="3000")
    expired_within_skew = unsecured_token({"email": "alice@example.com", "iat": NOW - 9, "exp": NOW - 1,
                                           "scp": ["kafka", "x"]})
    accepted = checked.validate(expired_within_skew)
    assert accepted.principal_name == "alice@example.com" and accepted.scope == {"kafka", "x"}
    assert accepted.lifetime_ms == (NOW - 1) * 1000
    issued_within_skew = unsecured_token({"email": "alice@example.com", "iat": NOW + 2, "exp": NOW + 9,
                                          "scp": "kafka"})
    assert checked.validate(issued_within_skew).start_time_ms == (NOW + 2) * 1000
    with pytest.raises(TokenRejected):
        checked.validate(unsecured_token({"email": "alice@example.com", "exp": NOW - 3, "scp": "kafka"}))


def test_unsecured_token_in_standard_base64_with_fractional_times_is_read_as_kafka_reads_it():
    """Kafka decodes with the standard alphabet (padding and all) and keeps
    fractional seconds to the millisecond."""
    import base64
    import json
    body = base64.b64encode(json.dumps({"sub": "a?>", "exp": NOW + 1.5, "iat": NOW}).encode()).decode()
    assert "+" in body and body.endswith("=")  # characters base64url would not write
    token = validator().validate(f"eyJhbGciOiJub25lIn0.{body}.")
    assert token.principal_name == "a?>" and token.lifetime_ms == 1_700_000_001_500


@pytest.mark.parametrize("options, reason", [
    ({"unsecuredValidatorAllowableClockSkewMs": "-1"}, "must not be negative"),
    ({"unsecuredValidatorAllowableClockSkewMs": "soon"}, "not an integer"),
    ({"unsecuredValidatorRequiredScope": 'kafka "quoted"'}, "Invalid scope value"),
])
def test_bad_unsecured_validator_options_are_config_errors(options, reason):
    with pytest.raises(OAuthBearerConfigError, match=reason):
        UnsecuredValidator(options)

"""SASL/OAUTHBEARER (RFC 7628) as Kafka's broker serves it
(OAuthBearerSaslServer), and Kafka's unsecured JWS tokens for development
(OAuthBearerUnsecuredValidatorCallbackHandler, its default validator).

The client's one message (RFC 7628 section 3.1, the GS2 header then
key=value pairs, each ended by ^A = 0x01):

    n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]...^A

Kafka's grammar, kept here: an authzid of 0x01-0x7F without ``=`` and
``,`` (or their escapes ``=2C`` and ``=3D``); keys ``[A-Za-z]+``; values
0x21-0x7E, space, tab, CR and LF; the scheme ``Bearer`` in any case; the
token ``[-_.a-zA-Z0-9]+`` (so RFC 7628's own example, whose token ends in
base64 padding, is refused as Kafka refuses it). A message that does not
parse fails the exchange at once; the client is told Kafka's generic text,
never why.

A token that parses but does not validate is answered, as RFC 7628 section
3.2.2 says, with a JSON challenge (``{"status":"invalid_token"}``, or
``insufficient_scope`` with the scope required); the client then sends a
lone ^A and the exchange fails with that JSON as the error message, which
is what Kafka's clients show their users. An authzid, when sent, must be
the token's principal. Extensions are accepted and ignored, as both of
Kafka's validators accept every one.

An unsecured token is a JWS with ``{"alg":"none"}`` and an empty signature
(RFC 7515 appendix A.5). Its principal is the ``sub`` claim (or the JAAS
option ``unsecuredValidatorPrincipalClaimName``); it needs a numeric
``exp`` after now (less ``unsecuredValidatorAllowableClockSkewMs``), an
``iat``, if any, before now (plus the skew) and before ``exp``, and every
scope of ``unsecuredValidatorRequiredScope`` (space separated) in its
``scope`` claim (``unsecuredValidatorScopeClaimName``): a string is one
scope, a list is several. For development only: anyone can write one.

Sans-io: the validators take the time from ``clock`` (epoch seconds).
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kcore.security.scram import AuthenticationFailed

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"
SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<pairs>(?:{_KEY}={_VALUE}\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)", re.ASCII)
# One scope item of unsecuredValidatorRequiredScope (RFC 6749 section 3.3's
# scope-token: 0x21, 0x23-0x5B, 0x5D-0x7E).
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")

UNSECURED_VALIDATOR_OPTIONS = ("unsecuredValidatorPrincipalClaimName", "unsecuredValidatorScopeClaimName",
                               "unsecuredValidatorRequiredScope", "unsecuredValidatorAllowableClockSkewMs")


class InvalidClientMessage(AuthenticationFailed):
    """The client's message does not parse; the text is for the broker's
    log, the client is told only that authentication failed."""


class OAuthBearerConfigError(ValueError):
    """A validator option the broker cannot start with."""


class TokenRejected(Exception):
    """A token that does not validate: RFC 7628's error status (and the
    scope it lacked), with the reason in the message for the broker's log."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None):
        super().__init__(reason)
        self.status = status
        self.scope = scope

    def challenge(self) -> str:
        """The JSON error the server sends, formatted as Kafka formats it."""
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"{self.scope}"'
        return text + "}"


@dataclass(frozen=True)
class ClientInitialResponse:
    token: str
    authorization_id: str
    extensions: dict[str, str]


@dataclass(frozen=True)
class OAuthBearerToken:
    """A validated token (Kafka's OAuthBearerToken): ``lifetime_ms`` is its
    expiry in epoch milliseconds, ``start_time_ms`` its ``iat`` if any."""

    value: str
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int
    start_time_ms: int | None


class TokenValidator(Protocol):
    def validate(self, token: str) -> OAuthBearerToken:
        """The token, or TokenRejected."""


def parse_client_initial_response(message: bytes) -> ClientInitialResponse:
    text = message.decode("utf-8", errors="replace")
    match = _CLIENT_FIRST.fullmatch(text)
    if match is None:
        raise InvalidClientMessage("Invalid OAUTHBEARER client first message")
    pairs: dict[str, str] = {}
    for pair in match.group("pairs").split(SEPARATOR)[:-1]:
        key, _, value = pair.partition("=")
        pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise InvalidClientMessage("Invalid OAUTHBEARER client first message: 'auth' not specified")
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise InvalidClientMessage("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match.group("scheme").lower() != "bearer":
        raise InvalidClientMessage(
            f"Invalid scheme in OAUTHBEARER client first message: {auth_match.group('scheme')}")
    return ClientInitialResponse(auth_match.group("token"), match.group("authzid") or "", pairs)


class OAuthBearerServer:
    """One OAUTHBEARER exchange (see module doc): ``evaluate`` once with the
    client's message, and once more with ^A after an error challenge."""

    mechanism = MECHANISM

    def __init__(self, validator: TokenValidator):
        self._validator = validator
        self._error: str | None = None
        self.token: OAuthBearerToken | None = None
        self.user: str | None = None
        self.complete = False

    async def evaluate(self, message: bytes) -> bytes:
        if message == SEPARATOR.encode() and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = None
        response = parse_client_initial_response(message)
        try:
            token = self._validator.validate(response.token)
        except TokenRejected as exc:
            log.info("OAUTHBEARER token refused: %s", exc)
            self._error = exc.challenge()
            return self._error.encode()
        if response.authorization_id and response.authorization_id != token.principal_name:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id "
                f"({response.authorization_id}) that is different from the token's principal name "
                f"({token.principal_name})")
        self.token = token
        self.user = token.principal_name
        self.complete = True
        return b""


class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler with the JAAS
    options of the listener's OAuthBearerLoginModule (see module doc). The
    options are checked here, so a bad one fails the broker's start."""

    def __init__(self, options: Mapping[str, str], clock: Callable[[], float] = time.time):
        self.principal_claim_name = _option(options, "unsecuredValidatorPrincipalClaimName") or "sub"
        self.scope_claim_name = _option(options, "unsecuredValidatorScopeClaimName") or "scope"
        self.required_scope = parse_scope(_option(options, "unsecuredValidatorRequiredScope") or "")
        skew = _option(options, "unsecuredValidatorAllowableClockSkewMs") or "0"
        try:
            self.allowable_clock_skew_ms = int(skew)
        except ValueError:
            raise OAuthBearerConfigError(
                f"unsecuredValidatorAllowableClockSkewMs {skew!r} is not an integer") from None
        if self.allowable_clock_skew_ms < 0:
            raise OAuthBearerConfigError(f"Allowable clock skew millis must not be negative: {skew}")
        self._clock = clock

    def validate(self, token: str) -> OAuthBearerToken:
        header, claims = _unsecured_parts(token)
        if header.get("alg") is None:
            raise TokenRejected("JWS header must have an Algorithm value")
        if _java_text(header["alg"]) != "none":
            raise TokenRejected("Unsecured JWS must have 'none' for an algorithm")
        if token.rsplit(".", 1)[1]:
            raise TokenRejected("Unsecured JWS must not contain a digital signature")
        scope = _unsecured_scope(claims, self.scope_claim_name)
        expiration = _number_claim(claims, "exp")
        if expiration is None:
            raise TokenRejected("No expiration time in JWT")
        principal = claims.get(self.principal_claim_name)
        if principal is not None and not isinstance(principal, str):
            raise TokenRejected(f"The '{self.principal_claim_name}' claim was not of type String")
        if principal is None or not principal.strip():
            raise TokenRejected(f"No principal name in JWT claim: {self.principal_claim_name}")
        issued_at = _number_claim(claims, "iat")
        self._check_times(issued_at, expiration)
        for item in self.required_scope:
            if item not in scope:
                required = "[" + ", ".join(self.required_scope) + "]"
                raise TokenRejected(f"The provided scope ({sorted(scope)}) was missing a required scope "
                                    f"({item}). All required scope elements: {required}",
                                    "insufficient_scope", required)
        return OAuthBearerToken(token, principal, frozenset(scope), _java_round(expiration * 1000),
                                None if issued_at is None else _java_round(issued_at * 1000))

    def _check_times(self, issued_at: float | None, expiration: float) -> None:
        now_ms = int(self._clock() * 1000)
        skew_ms = self.allowable_clock_skew_ms
        if issued_at is not None and 1000 * issued_at > now_ms + skew_ms:
            raise TokenRejected(f"The Issued At value ({issued_at} seconds) was after the indicated time "
                                f"({now_ms} ms) plus allowable clock skew ({skew_ms} ms)")
        if now_ms - skew_ms >= 1000 * expiration:
            raise TokenRejected(f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew_ms} ms) "
                                f"was on or after the Expiration Time value ({expiration} seconds)")
        if issued_at is not None and expiration <= issued_at:
            raise TokenRejected(f"The Expiration Time time ({expiration} seconds) was not after the "
                                f"Issued At time ({issued_at} seconds)")


def parse_scope(text: str) -> list[str]:
    """A space-delimited scope (Kafka's OAuthBearerScopeUtils.parseScope)."""
    items = [item for item in text.split(" ") if item]
    for item in items:
        if _SCOPE_ITEM.fullmatch(item) is None:
            raise OAuthBearerConfigError(f"Invalid scope value: {item}")
    return items


def _option(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name)
    return value.strip() if value is not None and value.strip() else None


def _unsecured_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if ".." in token:
        raise TokenRejected("Malformed compact serialization contains '..'")
    splits = token.split(".")
    if len(splits) != 3:
        raise TokenRejected("Unsecured JWS compact serializations must have 3 dot-separated "
                            "Base64URL-encoded values")
    return _json_object(splits[0]), _json_object(splits[1])


def _json_object(split: str) -> dict[str, Any]:
    """A header or claims segment as Kafka reads it: base64 (padding
    optional; the URL-safe alphabet as well, which JWS mandates), JSON
    whose members become strings, numbers or lists of strings."""
    try:
        decoded = base64.b64decode(split.translate(_URL_SAFE) + "=" * (-len(split) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise TokenRejected("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(decoded)
    except (UnicodeDecodeError, ValueError):
        raise TokenRejected("malformed JSON") from None
    if not isinstance(value, dict):
        return {}  # Jackson's fields() of a non-object: no members
    return {key: _member(item) for key, item in value.items()}


_URL_SAFE = str.maketrans("-_", "+/")


def _member(value: Any) -> Any:
    if isinstance(value, list):
        return [_java_text(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return _java_text(value)


def _java_text(value: Any) -> str:
    """Jackson's asText of a JSON value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    return ""


def _number_claim(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, (int, float)):
        raise TokenRejected(f"The '{name}' claim was not of type Number: String")
    return value


def _unsecured_scope(claims: dict[str, Any], name: str) -> set[str]:
    value = claims.get(name)
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if value is None:
        return set()
    if not isinstance(value, list):
        raise TokenRejected(f"The '{name}' claim was not of type List: Number")
    return {item.strip() for item in value if item.strip()}


def _java_round(value: float) -> int:
    """Java's Math.round: half up."""
    return math.floor(value + 0.5)

"""Who may use the schema registry: HTTP basic auth against the broker's
SASL users, and the broker's ACLs on the registry's resources.

Authentication is asked for exactly when a listener of the broker takes
PLAIN or SCRAM logins: then every request needs ``Authorization: Basic``
with a user of those listeners' JAAS configs (PLAIN) or a SCRAM user of
``kcore users`` (either mechanism's credential), and is answered 401 (with
``WWW-Authenticate``) without one. The principal is ``User:<name>``,
as over SASL; otherwise every caller is ``User:ANONYMOUS``. A failed
login waits as a failed SASL login does (``connection.failed.
authentication.delay.ms``, growing per address). A SCRAM check derives the
salted password (4096 iterations or more, ~2 ms); a successful one is
remembered for ``VERIFIED_TTL_S`` so that a client's every lookup does not
pay it again, and a password changed with ``kcore users`` is refused
within that time.

With an authorizer (``authorizer.class.name``), operations on a subject
need DESCRIBE (reads) or WRITE (registrations, deletes, its config and
mode) on the ``Subject`` resource of that name, and the global config and
mode need ALTER_CONFIGS on the cluster (ACLs: docs/schema-registry.md). A
refusal is 403 with Confluent's 40301.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable

from kcore.metadata_store.base import CredentialStore
from kcore.schema_registry import errors
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.rest import Authorize
from kcore.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kcore.security.authorizer import Authorizer
from kcore.security.scram import MECHANISMS, credential_from_salted, salted_password
from kcore.server.sasl import AuthFailures

ANONYMOUS = "User:ANONYMOUS"
# How long a verified user and password is taken without checking again.
VERIFIED_TTL_S = 60.0
# Verified logins remembered at most (the cache restarts past it).
MAX_VERIFIED = 10_000


class RegistryAuth:
    def __init__(self, plain_users: dict[str, str] | None, credentials: CredentialStore,
                 authorizer: Callable[[], Authorizer | None], failures: AuthFailures):
        """``plain_users`` None: no listener takes PLAIN or SCRAM, no login asked."""
        self.required = plain_users is not None
        self.plain_users = plain_users or {}
        self.credentials = credentials
        self._authorizer = authorizer
        self.failures = failures
        self._verified: dict[bytes, tuple[str, float]] = {}

    async def authenticate(self, header: str | None, host: str = "") -> str:
        """The caller's principal; RegistryError 401 when a login is needed and fails."""
        if not self.required:
            return ANONYMOUS
        user, password = _basic(header)
        if user is None or password is None:
            raise RegistryError(401, "Unauthorized: send HTTP basic auth with a SASL user of this broker")
        digest = hashlib.sha256(f"{user}\0{password}".encode()).digest()
        known = self._verified.get(digest)
        now = time.monotonic()
        if known is not None and known[1] > now:
            return known[0]
        await self.failures.wait_turn(host)
        if not await self._valid(user, password):
            self.failures.failed(host)
            raise RegistryError(401, "Unauthorized: bad user name or password")
        self.failures.succeeded(host)
        if len(self._verified) >= MAX_VERIFIED:
            self._verified.clear()
        principal = f"User:{user}"
        self._verified[digest] = (principal, now + VERIFIED_TTL_S)
        return principal

    async def _valid(self, user: str, password: str) -> bool:
        expected = self.plain_users.get(user)
        if expected is not None:
            return hmac.compare_digest(expected.encode(), password.encode())
        for mechanism in MECHANISMS:
            credential = await self.credentials.get(user, mechanism)
            if credential is None:
                continue
            salted = salted_password(mechanism, password, credential.salt, credential.iterations)
            derived = credential_from_salted(mechanism, salted, credential.salt, credential.iterations)
            return hmac.compare_digest(derived.stored_key, credential.stored_key)
        return False

    def authorizer(self, principal: str, host: str) -> Authorize:
        """The check the REST routes call for ``principal`` at ``host``."""
        authorizer = self._authorizer()
        if authorizer is None:
            return _allow

        def authorize(operation: AclOperation, subject: str | None) -> None:
            if subject is None:
                allowed = authorizer.authorize(principal, host, operation, ResourceType.CLUSTER, CLUSTER_NAME)
                resource = f"Cluster:{CLUSTER_NAME}"
            else:
                allowed = authorizer.authorize(principal, host, operation, ResourceType.SUBJECT, subject)
                resource = f"Subject:{subject}"
            if not allowed:
                raise RegistryError(errors.FORBIDDEN, f"User {principal} is denied operation "
                                                      f"{operation.name.title().replace('_', '')} on {resource}")
        return authorize


def _allow(operation: AclOperation, subject: str | None) -> None:
    return None


def _basic(header: str | None) -> tuple[str | None, str | None]:
    if not header:
        return None, None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    return (user, password) if sep and user else (None, None)

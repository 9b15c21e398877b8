"""AlterUserScramCredentials (key 51): store or delete SCRAM credentials.

The request carries PBKDF2 output (salted password), from which the stored
and server keys are derived here; the salted password itself is not kept.
Checks follow Kafka's: a known SCRAM mechanism, 4096-16384 iterations, a
non-empty user, salt and salted password, no user/mechanism both deleted
and upserted, deletions only of credentials that exist. One result per
user; a user with any failed change gets none of its changes applied.
"""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.metadata import MetadataUnavailableError
from kcore.protocol.errors import ErrorCode
from kcore.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_OF_TYPE,
    MIN_ITERATIONS,
    credential_from_salted,
)


async def handle(broker: BrokerFacade, context, request):
    try:
        return await _alter(broker, request.body)
    except MetadataUnavailableError as exc:
        users = list(dict.fromkeys(item.name for item in [*request.body.deletions,
                                                          *request.body.upsertions]))
        return {"throttle_time_ms": 0, "results": [
            {"user": user, "error_code": exc.error_code, "error_message": exc.message}
            for user in users]}


async def _alter(broker: BrokerFacade, body) -> dict:
    store = broker.scram_credentials
    existing = await store.all()
    errors: dict[str, tuple[int, str]] = {}
    users: list[str] = []

    def fail(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    upserted = {(item.name, item.mechanism) for item in body.upsertions}
    for item in body.deletions:
        _note(users, item.name)
        mechanism = MECHANISM_OF_TYPE.get(item.mechanism)
        if not item.name:
            fail(item.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            fail(item.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif (item.name, item.mechanism) in upserted:
            fail(item.name, ErrorCode.DUPLICATE_RESOURCE,
                 "A user credential cannot be altered twice in the same request")
        elif mechanism not in existing.get(item.name, {}):
            fail(item.name, ErrorCode.RESOURCE_NOT_FOUND,
                 "Attempt to delete a user credential that does not exist")
    for item in body.upsertions:
        _note(users, item.name)
        problem = _upsertion_problem(item)
        if problem is not None:
            fail(item.name, *problem)
    await store.alter(
        [(item.name, MECHANISM_OF_TYPE[item.mechanism],
          credential_from_salted(MECHANISM_OF_TYPE[item.mechanism], bytes(item.salted_password),
                                 bytes(item.salt), item.iterations))
         for item in body.upsertions if item.name not in errors],
        [(item.name, MECHANISM_OF_TYPE[item.mechanism])
         for item in body.deletions if item.name not in errors])
    return {"throttle_time_ms": 0, "results": [
        {"user": user, "error_code": errors.get(user, (ErrorCode.NONE, None))[0],
         "error_message": errors.get(user, (ErrorCode.NONE, None))[1]} for user in users]}


def _upsertion_problem(item) -> tuple[int, str] | None:
    if not item.name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if item.mechanism not in MECHANISM_OF_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if item.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too few iterations (at least {MIN_ITERATIONS})"
    if item.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too many iterations (at most {MAX_ITERATIONS})"
    if not item.salt or not item.salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


def _note(users: list[str], user: str) -> None:
    if user not in users:
        users.append(user)

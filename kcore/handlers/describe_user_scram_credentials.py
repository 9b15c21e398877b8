"""DescribeUserScramCredentials (key 50): each user's SCRAM mechanisms and
iteration counts; salts and keys never leave the broker. A named user
without credentials gets RESOURCE_NOT_FOUND, a name asked twice
DUPLICATE_RESOURCE (Kafka's answers)."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.scram import MECHANISMS


async def handle(broker: BrokerFacade, context, request):
    credentials = await broker.scram_credentials.all()
    asked = [user.name for user in request.body.users or []]
    results: list[dict] = []
    for user in asked or sorted(credentials):
        if asked.count(user) > 1:
            if not any(result["user"] == user for result in results):
                results.append(_result(user, ErrorCode.DUPLICATE_RESOURCE,
                                       "Cannot describe SCRAM credentials for the same user twice in a single request"))
            continue
        mechanisms = credentials.get(user)
        if not mechanisms:
            results.append(_result(user, ErrorCode.RESOURCE_NOT_FOUND,
                                   f"Attempt to describe a user credential that does not exist: {user}"))
            continue
        results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": None,
                        "credential_infos": [
                            {"mechanism": MECHANISMS[name][1], "iterations": credential.iterations}
                            for name, credential in sorted(mechanisms.items()) if name in MECHANISMS]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": results}


def _result(user: str, code: int, message: str) -> dict:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": []}

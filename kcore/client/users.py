"""SCRAM users: what ``kafka-configs --entity-type users`` does for SCRAM
credentials, through AlterUserScramCredentials and
DescribeUserScramCredentials (KIP-554).

The password never leaves the client: it sends PBKDF2(password, a fresh
random salt, iterations) and the broker derives the stored and server keys
from that. Either request may go to any broker; each keeps credentials
where the cluster's metadata lives (kcore/metadata_store/).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from kcore.client.errors import KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.scram import (
    MECHANISM_OF_TYPE,
    MECHANISMS,
    MIN_ITERATIONS,
    SALT_BYTES,
    salted_password,
)


@dataclass(frozen=True)
class UserCredentials:
    user: str
    mechanisms: tuple[tuple[str, int], ...]  # (mechanism, iterations)


class UserAdmin:
    """SCRAM user calls through a KafkaClient. Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def upsert(self, user: str, password: str, mechanisms: list[str],
                     iterations: int = MIN_ITERATIONS) -> None:
        upsertions = []
        for mechanism in mechanisms:
            salt = secrets.token_bytes(SALT_BYTES)
            upsertions.append({"name": user, "mechanism": MECHANISMS[mechanism][1],
                               "iterations": iterations, "salt": salt,
                               "salted_password": salted_password(mechanism, password, salt,
                                                                  iterations)})
        await self._alter({"deletions": [], "upsertions": upsertions})

    async def delete(self, user: str, mechanisms: list[str]) -> None:
        await self._alter({"deletions": [{"name": user, "mechanism": MECHANISMS[m][1]}
                                         for m in mechanisms], "upsertions": []})

    async def describe(self, users: list[str] | None = None) -> list[UserCredentials]:
        connection = await self.client.bootstrap()
        response = await connection.request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            {"users": [{"name": user} for user in users] if users else None})
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        found = []
        for result in response.results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message, context=f"user {result.user}")
            found.append(UserCredentials(result.user, tuple(
                (MECHANISM_OF_TYPE.get(info.mechanism, str(info.mechanism)), info.iterations)
                for info in result.credential_infos)))
        return found

    async def _alter(self, body: dict) -> None:
        connection = await self.client.bootstrap()
        response = await connection.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
        for result in response.results:
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, result.error_message, context=f"user {result.user}")

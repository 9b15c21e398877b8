"""Client quota administration: what `kafka-configs --entity-type
users/clients` does, on kcore.protocol.

Every call goes to one broker (any: quotas are stored with the cluster
metadata and reach every broker from there).
"""
from __future__ import annotations

from collections.abc import Sequence

from kcore.client.errors import KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.security.quotas import QuotaEntity

MATCH_EXACT, MATCH_DEFAULT = 0, 1  # DescribeClientQuotas match types


class QuotaAdmin:
    """AlterClientQuotas and DescribeClientQuotas through a KafkaClient.
    Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def alter_quotas(self, entity: QuotaEntity, values: dict[str, float | None]) -> None:
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [{
            "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity.parts],
            "ops": [{"key": key, "value": value or 0.0, "remove": value is None}
                    for key, value in values.items()]}], "validate_only": False})
        for entry in response.entries:
            if entry.error_code:
                raise KafkaError(entry.error_code, entry.error_message,
                                 context=f"quotas of {entity.describe()}")

    async def describe_quotas(self, components: Sequence[tuple[str, str | None]] = (),
                              strict: bool = False) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """Entities matching every (entity type, name) component: a name
        matches exactly, None the default; no components: every entity."""
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {
            "components": [{"entity_type": kind,
                            "match_type": MATCH_DEFAULT if name is None else MATCH_EXACT,
                            "match": name} for kind, name in components],
            "strict": strict})
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message,
                             context="DescribeClientQuotas")
        return [(QuotaEntity.of((e.entity_type, e.entity_name) for e in entry.entity),
                 {v.key: v.value for v in entry.values})
                for entry in response.entries or []]

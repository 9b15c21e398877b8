"""ACL and client quota administration: what `kafka-acls` and
`kafka-configs --entity-type users/clients` do, on kcore.protocol.

Every call goes to one broker (any: ACLs and quotas are stored with the
cluster metadata and reach every broker from there).
"""
from __future__ import annotations

from collections.abc import Sequence

from kcore.client.errors import KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.security.acl import AclBinding, AclFilter, operation, pattern_type, permission, resource_type
from kcore.security.quotas import QuotaEntity

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class SecurityAdmin:
    """ACL and quota calls through a KafkaClient. Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.CREATE_ACLS, {"creations": [
            {"resource_type": b.resource_type, "resource_name": b.resource_name,
             "resource_pattern_type": b.pattern_type, "principal": b.principal, "host": b.host,
             "operation": b.operation, "permission_type": b.permission} for b in bindings]})
        for binding, result in zip(bindings, response.results):
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message,
                                 context=f"creating {_describe(binding)}")

    async def describe_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.DESCRIBE_ACLS, _filter_fields(acl_filter))
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message, context="DescribeAcls")
        return [AclBinding(resource_type(r.resource_type), r.resource_name,
                           pattern_type(r.pattern_type), a.principal, a.host,
                           operation(a.operation), permission(a.permission_type))
                for r in response.resources for a in r.acls]

    async def delete_acls(self, filters: Sequence[AclFilter]) -> list[AclBinding]:
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.DELETE_ACLS, {
            "filters": [_filter_fields(f) for f in filters]})
        deleted = []
        for result in response.filter_results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message, context="DeleteAcls")
            deleted += [AclBinding(resource_type(m.resource_type), m.resource_name,
                                   pattern_type(m.pattern_type), m.principal, m.host,
                                   operation(m.operation), permission(m.permission_type))
                        for m in result.matching_acls]
        return deleted

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


def _filter_fields(acl_filter: AclFilter) -> dict:
    return {"resource_type_filter": acl_filter.resource_type,
            "resource_name_filter": acl_filter.resource_name,
            "pattern_type_filter": acl_filter.pattern_type,
            "principal_filter": acl_filter.principal, "host_filter": acl_filter.host,
            "operation": acl_filter.operation, "permission_type": acl_filter.permission}


def _describe(binding: AclBinding) -> str:
    return (f"{binding.permission.name} {binding.principal} {binding.operation.name} from "
            f"{binding.host} on {binding.resource_type.name} {binding.resource_name} "
            f"({binding.pattern_type.name})")

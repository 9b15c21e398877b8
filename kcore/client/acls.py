"""ACL administration: what `kafka-acls` does, on kcore.protocol.

Every call goes to one broker (any: ACLs are stored with the cluster
metadata and reach every broker from there).
"""
from __future__ import annotations

from collections.abc import Sequence

from kcore.client.errors import KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.security.acl import AclBinding, AclFilter, operation, pattern_type, permission, resource_type


class AclAdmin:
    """CreateAcls, DescribeAcls and DeleteAcls through a KafkaClient.
    Owned by one event loop."""

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

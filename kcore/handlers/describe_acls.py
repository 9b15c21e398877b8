"""DescribeAcls (key 29): the ACLs a filter matches, grouped by resource
pattern.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an
authorizer SECURITY_DISABLED. A filter with an UNKNOWN resource type,
pattern type, operation or permission gets INVALID_REQUEST.
"""
from __future__ import annotations

from collections.abc import Iterable

from kcore.handlers.authz import acl_admin_refusal
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    operation,
    pattern_type,
    permission,
    resource_type,
)


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    refusal = acl_admin_refusal(broker, context, AclOperation.DESCRIBE)
    if refusal is not None:
        return _error(*refusal)
    authorizer = broker.authorizer
    assert authorizer is not None
    acl_filter = AclFilter(resource_type(body.resource_type_filter), body.resource_name_filter,
                           pattern_type(body.pattern_type_filter), body.principal_filter,
                           body.host_filter, operation(body.operation),
                           permission(body.permission_type))
    reason = acl_filter.invalid_reason()
    if reason is not None:
        return _error(ErrorCode.INVALID_REQUEST, reason)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "resources": group_by_resource(authorizer.describe(acl_filter))}


def group_by_resource(acls: Iterable[AclBinding]) -> list[dict]:
    resources: dict[tuple, list[dict]] = {}
    for acl in acls:
        resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission})
    return [{"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
            for (kind, name, pattern), acls in resources.items()]


def _error(code: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}

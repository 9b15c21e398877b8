"""DeleteAcls (key 31): remove the ACLs each filter matches; each
filter's result names the ACLs it removed.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per filter);
without an authorizer SECURITY_DISABLED. A filter with an UNKNOWN
resource type, pattern type, operation or permission gets INVALID_REQUEST
and removes nothing.
"""
from __future__ import annotations

from kcore.handlers.authz import acl_admin_refusal
from kcore.handlers.base import BrokerFacade
from kcore.metadata import MetadataUnavailableError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import (
    AclFilter,
    AclOperation,
    operation,
    pattern_type,
    permission,
    resource_type,
)


async def handle(broker: BrokerFacade, context, request):
    filters = request.body.filters
    refusal = acl_admin_refusal(broker, context, AclOperation.ALTER)
    if refusal is not None:
        return _answer([_failed(*refusal) for _ in filters])
    authorizer = broker.authorizer
    assert authorizer is not None
    parsed = [AclFilter(resource_type(f.resource_type_filter), f.resource_name_filter,
                        pattern_type(f.pattern_type_filter), f.principal_filter, f.host_filter,
                        operation(f.operation), permission(f.permission_type))
              for f in filters]
    _, outcomes = authorizer.with_deleted(parsed)
    removed = [acl for outcome in outcomes if not isinstance(outcome, str) for acl in outcome]
    if removed:
        try:
            await broker.security_store.change_acls((), removed)
        except MetadataUnavailableError as exc:
            return _answer([_failed(exc.error_code, exc.message) for _ in filters])
    results = []
    for outcome in outcomes:
        if isinstance(outcome, str):
            results.append(_failed(ErrorCode.INVALID_REQUEST, outcome))
            continue
        results.append({"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": [
            {"error_code": ErrorCode.NONE, "error_message": None,
             "resource_type": acl.resource_type, "resource_name": acl.resource_name,
             "pattern_type": acl.pattern_type, "principal": acl.principal, "host": acl.host,
             "operation": acl.operation, "permission_type": acl.permission}
            for acl in outcome]})
    return _answer(results)


def _failed(code: int, message: str | None) -> dict:
    return {"error_code": code, "error_message": message, "matching_acls": []}


def _answer(results: list[dict]) -> dict:
    return {"throttle_time_ms": 0, "filter_results": results}

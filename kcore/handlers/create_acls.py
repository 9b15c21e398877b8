"""CreateAcls (key 30): add ACL bindings; one result per creation.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for each creation
otherwise); without an authorizer every creation gets SECURITY_DISABLED,
as in Kafka. A binding with an unknown or non-specific resource type,
pattern type (an ACL is LITERAL or PREFIXED), operation or permission, a
malformed principal or a CLUSTER resource not named ``kafka-cluster``
gets INVALID_REQUEST with the reason; the others are stored.
"""
from __future__ import annotations

from kcore.handlers.authz import acl_admin_refusal
from kcore.handlers.base import BrokerFacade
from kcore.metadata import MetadataUnavailableError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import (
    AclBinding,
    AclOperation,
    operation,
    pattern_type,
    permission,
    resource_type,
)


async def handle(broker: BrokerFacade, context, request):
    creations = request.body.creations
    refusal = acl_admin_refusal(broker, context, AclOperation.ALTER)
    if refusal is not None:
        return _answer([(refusal[0], None)] * len(creations))
    authorizer = broker.authorizer
    assert authorizer is not None
    bindings = [AclBinding(resource_type(c.resource_type), c.resource_name,
                           pattern_type(c.resource_pattern_type), c.principal, c.host,
                           operation(c.operation), permission(c.permission_type))
                for c in creations]
    _, errors = authorizer.with_created(bindings)
    valid = [binding for binding, error in zip(bindings, errors) if error is None]
    stored: tuple[int, str | None] = (ErrorCode.NONE, None)
    if valid:
        try:
            await broker.security_store.change_acls(valid, ())
        except MetadataUnavailableError as exc:
            stored = (exc.error_code, exc.message)
    return _answer([stored if error is None else (ErrorCode.INVALID_REQUEST, error)
                    for error in errors])


def _answer(results: list[tuple[int, str | None]]) -> dict:
    return {"throttle_time_ms": 0,
            "results": [{"error_code": code, "error_message": message} for code, message in results]}

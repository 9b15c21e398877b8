"""AlterClientQuotas (key 49): set or remove quotas of user / client-id
entities (KIP-546), one result per entry.

Needs ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED). An
entry with an unknown entity type, a type named twice, an empty name, an
unknown quota key or a value that is not positive gets INVALID_REQUEST
with the reason and changes nothing; validate_only checks and stores
nothing.
"""
from __future__ import annotations

from typing import Any

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.metadata import MetadataUnavailableError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation
from kcore.security.quotas import QuotaError, validate_entity, validate_quota


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    permitted = allowed_on_cluster(broker, context, AclOperation.ALTER_CONFIGS)
    results = []
    for entry in body.entries:
        parts = [(e.entity_type, e.entity_name) for e in entry.entity]
        result: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None,
                  "entity": [{"entity_type": kind, "entity_name": name} for kind, name in parts]}
        results.append(result)
        if not permitted:
            result["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            continue
        try:
            entity = validate_entity(parts)
            changes: dict[str, float | None] = {}
            for op in entry.ops:
                if op.key in changes:
                    raise QuotaError(f"{op.key} is altered twice in one entry")
                if op.remove:
                    validate_quota(op.key, 1.0)
                    changes[op.key] = None
                else:
                    validate_quota(op.key, op.value)
                    changes[op.key] = op.value
        except QuotaError as exc:
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = str(exc)
            continue
        if not body.validate_only and changes:
            try:
                await broker.security_store.change_quotas(entity, changes)
            except MetadataUnavailableError as exc:
                result["error_code"], result["error_message"] = exc.error_code, exc.message
    return {"throttle_time_ms": 0, "entries": results}

"""DescribeClientQuotas (key 48): the quotas of the entities that match
every filter component (KIP-546).

A component names an entity type and matches an exact name (match type
0), the default (1) or any specified name (2); ``strict`` leaves out
entities with types the filter does not name. Needs DESCRIBE_CONFIGS on
the cluster (CLUSTER_AUTHORIZATION_FAILED). An unknown entity type, a type
named twice or an unknown match type is INVALID_REQUEST.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation
from kcore.security.quotas import ENTITY_TYPES, QuotaEntity

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE_CONFIGS):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    components = [(c.entity_type, c.match_type, c.match) for c in body.components]
    reason = _invalid(components)
    if reason is not None:
        return _error(ErrorCode.INVALID_REQUEST, reason)
    entries = [{"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity.parts],
                "values": [{"key": key, "value": value} for key, value in sorted(values.items())]}
               for entity, values in broker.quotas.describe()
               if _matches(entity, components, body.strict)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "entries": entries}


def _invalid(components) -> str | None:
    kinds = [kind for kind, _, _ in components]
    if len(set(kinds)) != len(kinds):
        return "an entity type appears twice in the filter"
    for kind, match_type, _ in components:
        if kind not in ENTITY_TYPES:
            return f"unknown entity type {kind!r} (expected user or client-id)"
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return f"unknown match type {match_type}"
    return None


def _matches(entity: QuotaEntity, components, strict: bool) -> bool:
    parts = dict(entity.parts)
    if strict and set(parts) != {kind for kind, _, _ in components}:
        return False
    for kind, match_type, match in components:
        if kind not in parts:
            return False
        name = parts[kind]
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name is not None:
            return False
        if match_type == MATCH_SPECIFIED and name is None:
            return False
    return True


def _error(code: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}

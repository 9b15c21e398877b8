"""DeleteGroups (key 42): delete Empty groups and their committed offsets
(tombstones in `__consumer_offsets`); a group with members gets
NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. A share group's
share-partition state is deleted from `__share_group_state` with it."""
from __future__ import annotations

from kcore.handlers.authz import group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    names = list(dict.fromkeys(request.body.groups_names))
    deletable = [name for name in names
                 if group_allowed(broker, context, AclOperation.DELETE, name)]
    results: dict[str, int] = dict.fromkeys(names, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    share = [name for name in deletable if broker.share_groups.is_share_group(name)]
    deletable = [name for name in deletable if name not in share]
    results.update(broker.group_coordinator.delete_groups(deletable) if deletable else {})
    for name in share:
        results[name] = await broker.share_groups.delete_group(name)
    return {"throttle_time_ms": 0,
            "results": [{"group_id": name, "error_code": results[name]} for name in names]}

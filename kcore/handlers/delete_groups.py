"""DeleteGroups (key 42): delete Empty groups and their committed offsets
(tombstones in `__consumer_offsets`); a group with members gets
NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade


async def handle(broker: BrokerFacade, context, request):
    names = list(dict.fromkeys(request.body.groups_names))
    results = broker.group_coordinator.delete_groups(names)
    return {"throttle_time_ms": 0,
            "results": [{"group_id": name, "error_code": results[name]} for name in names]}

"""ListGroups (key 16): every group this broker coordinates, with its
protocol type ("" for groups that only store offsets)."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade


async def handle(broker: BrokerFacade, context, request):
    error, groups = broker.group_coordinator.list_groups()
    return {"throttle_time_ms": 0, "error_code": error,
            "groups": [{"group_id": group_id, "protocol_type": protocol_type}
                       for group_id, protocol_type, _state in groups]}

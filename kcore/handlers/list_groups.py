"""ListGroups (key 16): every group this broker coordinates, with its
protocol type ("" for groups that only store offsets, "share" for share
groups, KIP-932)."""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    error, groups = broker.group_coordinator.list_groups()
    groups += [(group_id, "share", state)
               for group_id, state in broker.share_groups.coordinator.list_groups()]
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster: the groups it may DESCRIBE.
        groups = [group for group in groups
                  if group_allowed(broker, context, AclOperation.DESCRIBE, group[0])]
    return {"throttle_time_ms": 0, "error_code": error,
            "groups": [{"group_id": group_id, "protocol_type": protocol_type}
                       for group_id, protocol_type, _state in groups]}

"""ListGroups (key 16): every group this broker coordinates, with its
protocol type ("" for groups that only store offsets); v4 adds each
group's state and a states filter (KIP-518), v5 its type ("classic",
"consumer", or "share" for share groups, KIP-932, whose protocol type is
"share" too) and a types filter (KIP-848). Both filters ignore case, as
Kafka's do, and an empty filter keeps every group."""
from __future__ import annotations

from kcore.handlers.authz import allowed_on_cluster, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.security.acl import AclOperation

FIRST_STATES_VERSION = 4
FIRST_TYPES_VERSION = 5
SHARE_TYPE = "share"


async def handle(broker: BrokerFacade, context, request):
    error, groups = broker.group_coordinator.list_groups()
    groups += [(group_id, SHARE_TYPE, state, SHARE_TYPE)
               for group_id, state in broker.share_groups.coordinator.list_groups()]
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster: the groups it may DESCRIBE.
        groups = [group for group in groups
                  if group_allowed(broker, context, AclOperation.DESCRIBE, group[0])]
    version = request.api_version
    states = {s.lower() for s in request.body.states_filter} if version >= FIRST_STATES_VERSION else set()
    types = {t.lower() for t in request.body.types_filter} if version >= FIRST_TYPES_VERSION else set()
    return {"throttle_time_ms": 0, "error_code": error,
            "groups": [{"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
                        "group_type": group_type}
                       for group_id, protocol_type, state, group_type in groups
                       if (not states or state.lower() in states)
                       and (not types or group_type.lower() in types)]}

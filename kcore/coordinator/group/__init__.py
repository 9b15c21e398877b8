"""The group coordinator over `__consumer_offsets`: classic groups and
consumer-protocol groups (KIP-848).

- state.py: GroupState (valid previous states per state), IllegalStateError
- group.py: GroupMetadata, MemberMetadata, JoinResult, SyncResult
- coordinator.py: GroupCoordinator (JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, timers), GroupConfig, JoinRequest
- offsets.py: OffsetCommit/Fetch/Delete, List/Describe/DeleteGroups, expiry
- manager.py: GroupMetadataManager, the __consumer_offsets topic
- records.py: __consumer_offsets key/value formats, partition_for
- consumer_protocol.py: the consumer embedded protocol (subscriptions, assignments)
- assignors.py: the server-side assignors uniform and range
- consumer_member.py: a consumer-protocol member and its reconciliation
- consumer_group.py: ConsumerGroup, its state and the replay of its records
- consumer_records.py: the consumer-group record types of __consumer_offsets
- consumer_coordinator.py: ConsumerGroupHeartbeat, session and rebalance timeouts
- consumer_admin.py: ConsumerGroupDescribe, deleting consumer groups
- consumer_classic.py: classic members inside consumer-protocol groups
- migration.py: groups changing protocol (upgrade, downgrade)
- lag.py: ConsumerLag, the groups' lag and its history, read by /metrics
  and the console; end_offsets.py: end offsets of partitions led elsewhere
"""
from kcore.coordinator.group.coordinator import GroupConfig, GroupCoordinator, JoinRequest
from kcore.coordinator.group.manager import OFFSETS_TOPIC, GroupMetadataManager
from kcore.coordinator.group.state import GroupState, IllegalStateError

__all__ = ["GroupConfig", "GroupCoordinator", "GroupMetadataManager", "GroupState",
           "IllegalStateError", "JoinRequest", "OFFSETS_TOPIC"]

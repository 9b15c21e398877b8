"""The classic consumer group coordinator over `__consumer_offsets`.

- state.py: GroupState (valid previous states per state), IllegalStateError
- group.py: GroupMetadata, MemberMetadata, JoinResult, SyncResult
- coordinator.py: GroupCoordinator (JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, timers), GroupConfig, JoinRequest
- offsets.py: OffsetCommit/Fetch/Delete, List/Describe/DeleteGroups, expiry
- manager.py: GroupMetadataManager, the __consumer_offsets topic
- records.py: __consumer_offsets key/value formats, partition_for
- consumer_protocol.py: topics of a consumer subscription
- lag.py: ConsumerLag, the groups' lag and its history, read by /metrics
  and the console; end_offsets.py: end offsets of partitions led elsewhere
"""
from kcore.coordinator.group.coordinator import GroupConfig, GroupCoordinator, JoinRequest
from kcore.coordinator.group.manager import OFFSETS_TOPIC, GroupMetadataManager
from kcore.coordinator.group.state import GroupState, IllegalStateError

__all__ = ["GroupConfig", "GroupCoordinator", "GroupMetadataManager", "GroupState",
           "IllegalStateError", "JoinRequest", "OFFSETS_TOPIC"]

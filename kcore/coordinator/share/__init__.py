"""Share groups (KIP-932), apart from the classic group coordinator.

- group.py: ShareGroup, ShareMember, the simple assignor
- coordinator.py: ShareGroupCoordinator (ShareGroupHeartbeat, describe,
  list, delete) on the group's __consumer_offsets partition leader
- share_partition.py: SharePartition, the per-record state machine
  (record locks, acknowledgements, delivery counts, the start offset)
- acquisition.py: acquiring records from a partition's log
- entries.py: loaded share-partitions, written back through the persister
- manager.py: SharePartitionManager (share sessions, ShareFetch and
  ShareAcknowledge)
- records.py: the __share_group_state record layout
- state_store.py: ShareStateStore, the share coordinator over __share_group_state
- persister.py: SharePersister, a share-partition's way to its share coordinator
- group_configs.py: the groups' share.* configs
- service.py: ShareGroupService, all of it on one broker
"""

"""Share groups on one broker: what the handlers, the console and /metrics see.

- ``coordinator`` (coordinator.py): membership of the share groups this
  broker coordinates;
- ``partitions`` (manager.py): ShareFetch and ShareAcknowledge on the
  share-partitions this broker leads;
- ``store`` (state_store.py): the share coordinator of the
  ``__share_group_state`` partitions this broker leads;
- ``persister`` (persister.py): the way from a share-partition to its
  share coordinator;
- ``configs`` (group_configs.py): the groups' share configs.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

from kcore.config import BrokerConfig
from kcore.controller.base import Controller
from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.coordinator.share.coordinator import ShareGroupCoordinator
from kcore.coordinator.share.group_configs import ShareDefaults, ShareGroupConfigs
from kcore.coordinator.share.manager import SharePartitionManager
from kcore.coordinator.share.persister import SharePersister
from kcore.coordinator.share.records import ShareKey
from kcore.coordinator.share.state_store import ShareStateConfig, ShareStateStore
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.topic_ids import TopicIds


class ShareGroupService:
    def __init__(self, config: BrokerConfig, controller: Controller, replica_manager: ReplicaManager,
                 classic: GroupCoordinator, topic_ids: TopicIds, replicated: bool) -> None:
        self.configs = ShareGroupConfigs(ShareDefaults(
            config["group.share.record.lock.duration.ms"], config["group.share.delivery.count.limit"],
            config["group.share.session.timeout.ms"], config["group.share.heartbeat.interval.ms"],
            config["group.share.max.size"], config["group.share.partition.max.record.locks"],
            config["group.share.max.share.sessions"]))
        # A node without ZooKeeper keeps one replica of internal topics.
        replication_factor = config["share.coordinator.state.topic.replication.factor"] if replicated else 1
        self.store = ShareStateStore(controller, replica_manager, ShareStateConfig(
            config["share.coordinator.state.topic.num.partitions"], replication_factor,
            min(config["share.coordinator.state.topic.min.isr"], replication_factor)))
        self.persister = SharePersister(config.broker_id, self.store, replica_manager.metadata_cache)
        self.coordinator = ShareGroupCoordinator(classic, replica_manager.metadata_cache, topic_ids,
                                                 self.configs)
        self.partitions = SharePartitionManager(config.broker_id, replica_manager, topic_ids,
                                                self.configs, self.persister)
        self.topic_ids = topic_ids
        classic.share_group_exists = self.is_share_group
        replica_manager.leadership_listeners.append(self._on_leadership_change)
        replica_manager.deleted_topic_listeners.append(self.partitions.on_topics_deleted)

    def _on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        self.store.on_leadership_change(partition, is_leader)
        self.partitions.on_leadership_change(partition, is_leader)
        self.coordinator.on_coordinator_moved()

    def state_keys(self, group_id: str) -> list[ShareKey]:
        """The share-partitions of a group with state: those this broker's
        share coordinator holds and those its coordinator ever assigned."""
        keys = set(self.store.keys_of_group(group_id))
        group = self.coordinator.groups.get(group_id)
        if group is not None:
            keys.update(ShareKey(group_id, topic_id, index) for topic_id, index in group.assigned_ever)
        return sorted(keys, key=lambda key: (str(key.topic_id), key.partition))

    def known_group_ids(self) -> set[str]:
        """Share groups this broker knows of: coordinated, or with state here."""
        return ({group_id for group_id, _state in self.coordinator.list_groups()}
                | {key.group_id for key in self.store.states})

    def is_share_group(self, group_id: str) -> bool:
        """A share group this broker coordinates, or one with state here."""
        return self.coordinator.is_share_group(group_id) or bool(self.store.keys_of_group(group_id))

    async def delete_group(self, group_id: str) -> int:
        """DeleteGroups of an empty share group: its state goes too."""
        keys = self.state_keys(group_id)
        if keys and self.coordinator.check_group(group_id) == ErrorCode.NONE:
            self.coordinator.remember(group_id)
        code = self.coordinator.forget(group_id)
        if code != ErrorCode.NONE:
            return code
        for key in keys:
            self.partitions.entries.drop(key)
            outcome = await self.persister.delete(key)
            if outcome != ErrorCode.NONE:
                return outcome
        return ErrorCode.NONE

    def shutdown(self) -> None:
        self.coordinator.shutdown()
        self.partitions.shutdown()
        self.persister.close()

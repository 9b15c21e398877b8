"""The partitions this broker hosts, and its side of the controller requests.

``ReplicaManager`` implements ``ControllerEvents`` (controller/base.py):
LeaderAndIsr makes each named partition a leader or a follower (opening its
log on first sight), UpdateMetadata refreshes the metadata cache (and
deletes logs of partitions whose replicas no longer include this broker),
StopReplica stops (and may delete) replicas. A request from a controller older than the
newest one seen is refused whole with STALE_CONTROLLER_EPOCH; a partition
state that is not newer than the one known (leader epoch, then partition
epoch) is refused per partition with STALE_CONTROLLER_EPOCH, as Kafka does.

Followers replicate through the fetcher manager (fetcher.py); leaders
propose ISR changes through ``alter_partition.py`` (the controller decides).
Leadership changes are announced to ``leadership_listeners`` (the group
coordinator loads or unloads the groups of a ``__consumer_offsets``
partition). High watermarks are checkpointed to each log dir's
``replication-offset-checkpoint`` and a restarted replica starts from them.

Effective topic configs are the topic's overrides on top of the broker's
defaults (``BrokerConfig.topic_defaults``).

Not safe across await; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from kcore.clock import SYSTEM_CLOCK, Clock
from kcore.controller.base import StopReplicaPartition
from kcore.log.manager import LogManager
from kcore.metadata import BrokerInfo, PartitionState, TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.fetch_session import FetchSessionCache
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.partition import Partition
from kcore.replication.replica_selector import ReplicaSelector
from kcore.replication.replication_quota import ReplicationQuota
from kcore.replication.txn_markers import TxnMarkerWriter

log = logging.getLogger(__name__)

# (partition, is_leader) after a partition became leader or follower, or
# (partition, False) before it stops.
LeadershipListener = Callable[[Partition, bool], None]


class Fetchers(Protocol):
    """The follower fetchers (fetcher.py), as the replica manager drives them."""

    def add_partitions(self, leader: BrokerInfo, partitions: Sequence[Partition]) -> None: ...

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None: ...


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, topic_defaults: dict[str, Any],
                 producer_expiration_ms: int,
                 topic_overrides: Callable[[str], dict[str, Any]] | None = None,
                 replica_lag_time_max_ms: int = 30_000, fetch_session_cache_slots: int = 1000,
                 clock: Clock = SYSTEM_CLOCK):
        self.broker_id = broker_id
        # Every partition and fetch session reads time here (kcore/clock.py).
        self.clock = clock
        self.log_manager = log_manager
        self.topic_defaults = topic_defaults
        self.producer_expiration_ms = producer_expiration_ms
        self.topic_overrides = topic_overrides or (lambda topic: {})
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.partitions: dict[TopicPartition, Partition] = {}
        self.metadata_cache = MetadataCache()
        # A follower's session reminds the leader it is caught up on its idle
        # partitions 8 times per replica.lag.time.max.ms, so none leaves the ISR.
        self.fetch_sessions = FetchSessionCache(fetch_session_cache_slots,
                                                replica_lag_time_max_ms // 8, clock)
        self.controller_epoch = 0
        self.fetchers: Fetchers | None = None
        self.isr_change_handler: Callable[[Partition, list[int]], None] | None = None
        self.leadership_listeners: list[LeadershipListener] = []
        # Called with the names of topics UpdateMetadata says were deleted
        # (the group coordinator drops their committed offsets).
        self.deleted_topic_listeners: list[Callable[[set[str]], object]] = []
        # WriteTxnMarkers on the partitions this broker leads.
        self.txn_markers = TxnMarkerWriter(self)
        self._checkpointed_hw = log_manager.read_high_watermarks()
        # Replication throttles (replication_quota.py); the broker gives
        # them the topics' configs and the rates.
        self.leader_quota = ReplicationQuota(broker_id, "leader.replication.throttled.replicas",
                                             lambda topic: None)
        self.follower_quota = ReplicationQuota(broker_id, "follower.replication.throttled.replicas",
                                               lambda topic: None)
        # replica.selector.class (KIP-392, replica_selector.py): None, every
        # consumer reads from the leader.
        self.replica_selector: ReplicaSelector | None = None

    def effective_configs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        return {**self.topic_defaults, **overrides}

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def topic_partitions(self, topic: str) -> Iterable[Partition]:
        return (p for (name, _), p in self.partitions.items() if name == topic)

    def leader_partitions(self) -> Iterable[Partition]:
        return (p for p in self.partitions.values() if p.is_leader)

    # -- ControllerEvents ------------------------------------------------------------
    def _stale(self, controller_epoch: int) -> bool:
        if controller_epoch < self.controller_epoch:
            log.warning("ignoring a request of controller epoch %d (newest seen %d)",
                        controller_epoch, self.controller_epoch)
            return True
        self.controller_epoch = controller_epoch
        return False

    def on_leader_and_isr(self, controller_id: int, controller_epoch: int,
                          states: Sequence[PartitionState],
                          leaders: Sequence[BrokerInfo]) -> dict[TopicPartition, int]:
        if self._stale(controller_epoch):
            return {state.topic_partition: ErrorCode.STALE_CONTROLLER_EPOCH for state in states}
        errors: dict[TopicPartition, int] = {}
        new_leaders: list[Partition] = []
        new_followers: list[Partition] = []
        for state in states:
            key = state.topic_partition
            errors[key] = ErrorCode.NONE
            if self.broker_id not in state.replicas:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            partition = self.partitions.get(key)
            if partition is not None and not partition.is_newer(state):
                errors[key] = ErrorCode.STALE_CONTROLLER_EPOCH
                continue
            try:
                partition = partition or self._open(state.topic, state.partition)
            except Exception as exc:  # OSError, LogError: this partition only
                log.error("%s-%d: cannot open the log: %s", state.topic, state.partition, exc)
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            if state.leader == self.broker_id:
                partition.make_leader(state)
                new_leaders.append(partition)
            elif partition.make_follower(state):
                new_followers.append(partition)
        self._start_roles(new_leaders, new_followers, leaders)
        return errors

    def _start_roles(self, new_leaders: list[Partition], new_followers: list[Partition],
                     leaders: Sequence[BrokerInfo]) -> None:
        if self.fetchers is not None:
            self.fetchers.remove_partitions(p.topic_partition for p in new_leaders)
            self.fetchers.remove_partitions(p.topic_partition for p in new_followers)
            addresses = {broker.broker_id: broker for broker in leaders}
            by_leader: dict[int, list[Partition]] = {}
            for partition in new_followers:
                by_leader.setdefault(partition.leader_id, []).append(partition)
            for leader_id, partitions in by_leader.items():
                leader = addresses.get(leader_id) or self.metadata_cache.broker(leader_id)
                if leader is None:
                    log.warning("no address for leader %d of %d partitions", leader_id,
                                len(partitions))
                    continue
                self.fetchers.add_partitions(leader, partitions)
        for partition in new_leaders:
            self._announce(partition, True)
        for partition in new_followers:
            self._announce(partition, False)

    def _announce(self, partition: Partition, is_leader: bool) -> None:
        for listener in self.leadership_listeners:
            try:
                listener(partition, is_leader)
            except Exception:
                log.exception("leadership listener failed for %s-%d", partition.topic,
                              partition.index)

    def on_update_metadata(self, controller_id: int, controller_epoch: int,
                           brokers: Sequence[BrokerInfo], states: Sequence[PartitionState],
                           deleted: Sequence[str] = ()) -> int:
        if self._stale(controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.metadata_cache.update(controller_id, brokers, states, deleted)
        self._delete_strays(states)
        if deleted:
            for listener in self.deleted_topic_listeners:
                listener(set(deleted))
        return ErrorCode.NONE

    def _delete_strays(self, states: Sequence[PartitionState]) -> None:
        """Delete logs of partitions this broker is no longer a replica of.
        A replica removed by a reassignment while its broker was down never
        got its StopReplica; the controller's full UpdateMetadata to the
        restarted broker names the partition's replicas without it. A log
        this broker serves is never a stray: only the controller's
        LeaderAndIsr / StopReplica change those."""
        for state in states:
            key = state.topic_partition
            if self.broker_id in state.replicas or key in self.partitions:
                continue
            if self.log_manager.get_log(*key) is not None:
                log.info("%s-%d: replicas are %s, not this broker: deleting the stray log",
                         key[0], key[1], list(state.replicas))
                self.log_manager.delete_log(*key)

    def on_stop_replica(self, controller_epoch: int,
                        partitions: Sequence[StopReplicaPartition]) -> dict[TopicPartition, int]:
        if self._stale(controller_epoch):
            return {(p.topic, p.partition): ErrorCode.STALE_CONTROLLER_EPOCH for p in partitions}
        errors: dict[TopicPartition, int] = {}
        if self.fetchers is not None:
            self.fetchers.remove_partitions((p.topic, p.partition) for p in partitions)
        for item in partitions:
            key = (item.topic, item.partition)
            errors[key] = ErrorCode.NONE
            partition = self.partitions.get(key)
            if partition is not None and 0 <= item.leader_epoch < partition.leader_epoch:
                errors[key] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            if partition is not None:
                self._announce(partition, False)
                partition.stop()
            if item.delete:
                self.partitions.pop(key, None)
                self.log_manager.delete_log(*key)
        return errors

    def update_topic_defaults(self, defaults: dict[str, Any]) -> None:
        """Dynamic broker configs changed the topic defaults: every
        partition's effective config is derived again."""
        if defaults == self.topic_defaults:
            return
        self.topic_defaults = defaults
        self.log_manager.update_defaults(defaults)
        for topic in {name for name, _ in self.partitions}:
            self.on_topic_config_change(topic)

    def on_topic_config_change(self, topic: str) -> None:
        configs = self.effective_configs(self.topic_overrides(topic))
        for (name, index), partition in self.partitions.items():
            if name == topic:
                partition.configs = configs
                self.log_manager.update_config(topic, index, configs)

    # -- partitions ---------------------------------------------------------------------
    def _open(self, topic: str, index: int) -> Partition:
        configs = self.effective_configs(self.topic_overrides(topic))
        log_ = self.log_manager.get_or_create_log(topic, index, configs)
        partition = Partition(topic, index, log_, configs, self.broker_id,
                              self.producer_expiration_ms,
                              high_watermark=self._checkpointed_hw.get((topic, index)),
                              clock=self.clock)
        partition.replica_lag_time_max_ms = self.replica_lag_time_max_ms
        partition.isr_changes = self._propose_isr
        partition.change_listener = self.fetch_sessions.partition_changed
        partition.is_live_broker = lambda broker_id: broker_id in self.metadata_cache.brokers
        self.partitions[(topic, index)] = partition
        self.fetch_sessions.partition_changed(partition, True)  # a new replica: sessions re-read
        return partition

    def _propose_isr(self, partition: Partition, new_isr: list[int]) -> None:
        if self.isr_change_handler is None:
            partition.on_isr_change(ErrorCode.NOT_CONTROLLER, partition.leader_epoch,
                                    partition.isr, partition.partition_epoch)
            return
        self.isr_change_handler(partition, new_isr)

    def maybe_shrink_isr(self) -> None:
        for partition in list(self.leader_partitions()):
            partition.maybe_shrink_isr()

    async def wait_for_data(self, partitions: list[Partition], timeout_s: float,
                            for_replica: bool = False) -> None:
        """Park a fetch until any of its partitions gets new data (or the
        deadline): the fetch purgatory, keyed by partition."""
        if timeout_s <= 0 or not partitions:
            return
        waiters = [p.data_waiter(for_replica) for p in partitions]
        try:
            await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    # -- background duties and shutdown -----------------------------------------------------
    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.checkpoint_high_watermarks(
            {key: p.high_watermark for key, p in self.partitions.items()})

    def snapshot_producer_states(self) -> None:
        for partition in self.partitions.values():
            partition.snapshot_producer_state()

    def shutdown(self) -> None:
        if self.fetchers is not None:
            self.fetchers.remove_partitions(list(self.partitions))
        for partition in self.partitions.values():
            partition.stop()
            # The log manager's shutdown syncs the filesystem after this.
            partition.snapshot_producer_state(durable=False)
        try:
            self.checkpoint_high_watermarks()
        except Exception as exc:  # KafkaStorageError / OSError: the logs still close
            log.error("cannot checkpoint high watermarks: %s", exc)
        self.partitions.clear()

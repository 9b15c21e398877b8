"""The partitions this broker hosts, and its side of the controller requests.

``ReplicaManager`` implements ``ControllerEvents`` (controller/base.py):
LeaderAndIsr makes each named partition a leader or a follower (opening its
log on first sight), UpdateMetadata refreshes the metadata cache (and
deletes logs of partitions whose replicas no longer include this broker),
StopReplica stops (and may delete) replicas. A request from a controller older than the
newest one seen is refused whole with STALE_CONTROLLER_EPOCH; a partition
state that is not newer than the one known (leader epoch, then partition
epoch) is refused per partition with STALE_CONTROLLER_EPOCH, as Kafka does.

Topic ids (KIP-516): a log records its topic's id (``partition.metadata``)
when the partition first opens under an id. A log whose id is not the
one the controller names belongs to a deleted topic of the same name: it
is a stray, closed and set aside (``LogManager.set_aside_stray``), and the
partition opens a new, empty log; so does a log a FULL LeaderAndIsr does
not name (a topic deleted while this broker was away). Kafka's ZooKeeper
mode refuses such a partition with INCONSISTENT_TOPIC_ID until an
operator steps in; kcore's controller deletes a topic without waiting
for absent replicas, so the controller's id is the truth and the stray
cannot be needed.

Followers replicate through the fetcher manager (fetcher.py); leaders
propose ISR changes through ``alter_partition.py`` (the controller decides).
Leadership changes are announced to ``leadership_listeners`` (the group
coordinator loads or unloads the groups of a ``__consumer_offsets``
partition). High watermarks are checkpointed to each log dir's
``replication-offset-checkpoint`` and a restarted replica starts from them.

Effective topic configs are the topic's overrides on top of the broker's
defaults (``BrokerConfig.topic_defaults``).

Log dirs (Kafka's ReplicaManager.alterReplicaLogDirs and
handleLogDirFailure): ``alter_replica_log_dirs`` starts moving replicas to
another log dir of this broker (log_dir_mover.py), or records where a
partition not hosted yet is to be created. A log dir that fails takes its
partitions offline: they leave ``partitions`` for ``offline_partitions``,
whose requests answer KAFKA_STORAGE_ERROR (``partition_error``), and the
``log_dir_failure_listeners`` are told (the broker tells the controller,
which moves their leadership). Partitions in the other dirs go on.

Not safe across await; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kcore.clock import SYSTEM_CLOCK, Clock
from kcore.controller.base import StopReplicaPartition
from kcore.log.errors import KafkaStorageError
from kcore.log.log import FUTURE_DIR_SUFFIX
from kcore.log.log_validator import SchemaIdCheck
from kcore.log.manager import LogManager
from kcore.metadata import NO_TOPIC_ID, BrokerInfo, PartitionState, TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.fetch_session import FetchSessionCache
from kcore.replication.log_dir_mover import LogDirMover
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.partition import Partition, SchemaChecks
from kcore.replication.replica_selector import ReplicaSelector
from kcore.replication.replication_quota import ReplicationQuota
from kcore.replication.txn_markers import TxnMarkerWriter

log = logging.getLogger(__name__)

# A file name is at most 255 bytes: a future log's directory name,
# "<topic>-<partition>.<32 hex digits>-future", must fit (Kafka's KAFKA-4893).
MAX_DIR_NAME = 255
_UNIQUE_ID_LENGTH = 1 + 32

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
        # Set when this broker's shutdown begins (its controlled shutdown):
        # it starts no fetch for a partition it follows out of the ISR
        # (_still_in_sync), as KIP-841 makes a broker in controlled shutdown
        # ineligible for any ISR.
        self.leaving = False
        self.isr_change_handler: Callable[[Partition, list[int]], None] | None = None
        self.leadership_listeners: list[LeadershipListener] = []
        # (topic, configs) -> the (key, value) schema id checks of topics with
        # schema validation on: the broker's schema registry (set by the broker).
        self.schema_checks: SchemaChecks | None = None
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
        # Partitions whose log dir failed: their requests answer KAFKA_STORAGE_ERROR.
        self.offline_partitions: set[TopicPartition] = set()
        self.mover = LogDirMover(log_manager)
        log_manager.dirs.on_failure = self.handle_log_dir_failure
        # Called with each log dir that went offline (the broker tells the controller).
        self.log_dir_failure_listeners: list[Callable[[Path], object]] = []

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
                          leaders: Sequence[BrokerInfo], full: bool = False
                          ) -> dict[TopicPartition, int]:
        if self._stale(controller_epoch):
            return {state.topic_partition: ErrorCode.STALE_CONTROLLER_EPOCH for state in states}
        if full:
            self._set_aside_unnamed(states)
        errors: dict[TopicPartition, int] = {}
        new_leaders: list[Partition] = []
        new_followers: list[Partition] = []
        for state in states:
            errors[state.topic_partition], partition = self._partition_for(state)
            if partition is None:
                continue
            if state.leader == self.broker_id:
                partition.make_leader(state)
                new_leaders.append(partition)
            elif partition.make_follower(state):
                new_followers.append(partition)
            if partition.future_log is not None:
                self.mover.start(partition)  # a move a StopReplica paused goes on
        self._start_roles(new_leaders, new_followers, leaders)
        return errors

    def _partition_for(self, state: PartitionState) -> tuple[int, Partition | None]:
        """The partition a LeaderAndIsr state applies to (opened if new, a
        stray log set aside first), or the error that refuses the state."""
        key = state.topic_partition
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if key in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR, None
        existing = self.log_manager.get_log(*key)
        if existing is not None and _other_topic(existing.topic_id, state.topic_id):
            self._set_aside(key, f"it belongs to topic id {existing.topic_id}, the partition "
                                 f"now to {state.topic_id}")
        partition = self.partitions.get(key)
        if partition is not None and not partition.is_newer(state):
            return ErrorCode.STALE_CONTROLLER_EPOCH, None
        try:
            partition = partition or self._open(state.topic, state.partition)
            if state.topic_id != NO_TOPIC_ID:
                partition.log.assign_topic_id(state.topic_id)
        except Exception as exc:  # OSError, LogError: this partition only
            log.error("%s-%d: cannot open the log: %s", state.topic, state.partition, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR, None
        return ErrorCode.NONE, partition

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
                if self.leaving:
                    partitions = self._still_in_sync(partitions)
                    if not partitions:
                        continue
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

    def _still_in_sync(self, partitions: list[Partition]) -> list[Partition]:
        """A leaving broker follows only what it is in sync on. The rest
        (the leaderships its controlled shutdown handed over, out of their
        new ISR): caught up, it would be proposed back into their ISR, and a
        pending ISR change holds the high watermark until a controller
        answers it, when none may be left (the whole cluster stopping)."""
        kept = [p for p in partitions if self.broker_id in p.isr]
        if len(kept) < len(partitions):
            log.info("leaving: not fetching %d partitions this broker follows out of their ISR",
                     len(partitions) - len(kept))
        return kept

    def _set_aside_unnamed(self, states: Sequence[PartitionState]) -> None:
        """A FULL LeaderAndIsr names every partition this broker hosts: a
        log it does not name, or names under another topic id, is a stray
        (Kafka's findStrayReplicas)."""
        named = {state.topic_partition: state.topic_id for state in states}
        for log_ in self.log_manager.all_logs():
            key = (log_.topic, log_.partition)
            if key not in named:
                self._set_aside(key, "the controller names no such partition on this broker")
            elif _other_topic(log_.topic_id, named[key]):
                self._set_aside(key, f"it belongs to topic id {log_.topic_id}, the partition "
                                     f"now to {named[key]}")

    def _set_aside(self, key: TopicPartition, reason: str) -> None:
        """Stop the partition and set its log aside (module doc)."""
        if self.fetchers is not None:
            self.fetchers.remove_partitions([key])
        partition = self.partitions.pop(key, None)
        if partition is not None:
            self._announce(partition, False)
            partition.stop()
        path = self.log_manager.set_aside_stray(*key)
        log.warning("%s-%d: the log is a stray (%s): set aside as %s", key[0], key[1], reason, path)

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
            self.mover.cancel(key)
            if key in self.offline_partitions:
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
                if item.delete:
                    self.offline_partitions.discard(key)
                continue
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
        partition.storage_error = self.log_manager.dirs.report
        partition.schema_checks = self._schema_checks
        self.partitions[(topic, index)] = partition
        future = self.log_manager.get_future_log(topic, index)
        if future is not None:  # a move the last stop interrupted goes on
            partition.future_log = future
            self.mover.start(partition)
        self.fetch_sessions.partition_changed(partition, True)  # a new replica: sessions re-read
        return partition

    def _schema_checks(self, topic: str, configs: dict[str, Any]) -> tuple[SchemaIdCheck | None,
                                                                           SchemaIdCheck | None]:
        """The schema registry's checks for a topic with validation on
        (``schema_checks``, set by the broker); none without a registry."""
        if self.schema_checks is None:
            return None, None
        return self.schema_checks(topic, configs)

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
        # One future in every partition's list and one timer: asyncio.wait
        # over a future per partition cost ~3% of the broker's CPU at 20k
        # msg/s (16 partitions, a fetch parked per produce).
        loop = asyncio.get_running_loop()
        woken = loop.create_future()
        for partition in partitions:
            partition.add_data_waiter(woken, for_replica)
        timer = loop.call_later(timeout_s, _resolve, woken)
        try:
            await woken
        finally:
            timer.cancel()
            woken.cancel()  # done already, unless the fetch itself was cancelled

    # -- log dirs ---------------------------------------------------------------------------
    def partition_error(self, topic: str, index: int) -> int:
        """The answer for a partition this broker does not serve (Kafka's
        getPartitionOrError): KAFKA_STORAGE_ERROR in a failed log dir,
        NOT_LEADER_OR_FOLLOWER for another broker's, else
        UNKNOWN_TOPIC_OR_PARTITION."""
        if (topic, index) in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if self.metadata_cache.partition(topic, index) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def alter_replica_log_dirs(self, moves: Mapping[TopicPartition, str]) -> dict[TopicPartition, int]:
        """Move each replica to the log dir named (an absolute path of
        ``log.dirs``); Kafka's error code per partition."""
        return {key: self._alter_log_dir(key, path) for key, path in moves.items()}

    def _alter_log_dir(self, key: TopicPartition, path: str) -> int:
        topic, index = key
        if len(f"{topic}-{index}{FUTURE_DIR_SUFFIX}") + _UNIQUE_ID_LENGTH > MAX_DIR_NAME:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        directory = self.log_manager.dirs.find(path)
        if directory is None:
            return ErrorCode.LOG_DIR_NOT_FOUND
        if not self.log_manager.dirs.is_online(directory) or key in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self.partitions.get(key)
        if partition is None:
            if self.metadata_cache.partition(topic, index) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            # Created there when this broker becomes a replica (Kafka answers
            # REPLICA_NOT_AVAILABLE meanwhile).
            self.log_manager.maybe_update_preferred_log_dir(topic, index, directory)
            return ErrorCode.REPLICA_NOT_AVAILABLE
        future = partition.future_log
        if future is not None and future.dir.parent != directory:
            self._stop_move(partition)  # moving elsewhere now (or back: cancelled)
        if partition.future_log is None and self.log_manager.log_dir_of(topic, index) != directory:
            try:
                partition.future_log = self.log_manager.create_future_log(topic, index, directory)
            except KafkaStorageError as exc:
                log.error("%s-%d: %s", topic, index, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
            self.mover.start(partition)
        return ErrorCode.NONE

    def _stop_move(self, partition: Partition, delete: bool = True) -> None:
        self.mover.cancel(partition.topic_partition)
        partition.future_log = None
        self.log_manager.remove_future_log(partition.topic, partition.index, delete)

    def offset_lag(self, topic: str, index: int, log_end_offset: int, is_future: bool) -> int:
        """DescribeLogDirs' offset lag of a log ending at ``log_end_offset``
        (Kafka's getLogEndOffsetLag): a future log's distance to the current
        log's end; a current log's high watermark minus its end, at least 0;
        -1 when the partition is not served."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return -1
        if is_future:
            return partition.log_end_offset - log_end_offset
        return max(partition.high_watermark - log_end_offset, 0)

    def handle_log_dir_failure(self, directory: Path, reason: str) -> None:
        """Take ``directory`` offline: its partitions stop (no fetcher, no
        waiter left, leadership given up here) and answer
        KAFKA_STORAGE_ERROR, moves into it stop, then the listeners learn it."""
        if not self.log_manager.dirs.is_online(directory):
            return
        failed = [p for p in self.partitions.values() if p.log.dir.parent == directory]
        for partition in self.partitions.values():
            future = partition.future_log
            if future is not None and future.dir.parent == directory:
                self.mover.cancel(partition.topic_partition)
                partition.future_log = None  # the log manager closes it
        if self.fetchers is not None:
            self.fetchers.remove_partitions(p.topic_partition for p in failed)
        for partition in failed:
            if partition.future_log is not None:
                self._stop_move(partition)
            del self.partitions[partition.topic_partition]
            self.offline_partitions.add(partition.topic_partition)
            self._announce(partition, False)
            partition.stop()
        self.log_manager.handle_log_dir_failure(directory, reason)
        log.error("stopped serving %d partitions in the failed log dir %s", len(failed), directory)
        for listener in self.log_dir_failure_listeners:
            try:
                listener(directory)
            except Exception:
                log.exception("log dir failure listener failed for %s", directory)

    # -- background duties and shutdown -----------------------------------------------------
    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.checkpoint_high_watermarks(
            {key: p.high_watermark for key, p in self.partitions.items()})

    def snapshot_producer_states(self) -> None:
        for partition in self.partitions.values():
            partition.snapshot_producer_state()

    def shutdown(self) -> None:
        self.mover.shutdown()
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


def _other_topic(log_topic_id: uuid.UUID | None, topic_id: uuid.UUID) -> bool:
    """Whether a log recorded under ``log_topic_id`` belongs to a topic
    other than ``topic_id`` (an unknown id on either side says nothing)."""
    return log_topic_id is not None and topic_id != NO_TOPIC_ID and log_topic_id != topic_id


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)

"""The active controller: the one broker that decides leaders and ISRs.

A broker becomes it by creating the ephemeral ``/controller`` znode
(zk_controller.py) and stays it until its ZooKeeper session ends. On
taking office it bumps ``/controller_epoch`` (every request it sends
carries the epoch and brokers refuse older ones; every state it writes is
conditional on that epoch's znode version, zk_state.py), reads the whole
cluster state, elects leaders where the old ones are gone and tells every
broker everything (UpdateMetadata to all, LeaderAndIsr to every replica).

Then it reacts to events, one at a time in arrival order (Kafka's
single-threaded ControllerEventManager, event_manager.py): brokers joining, leaving or
restarting (``/brokers/ids``), topics created (``/brokers/topics``),
partitions added (a topic's assignment znode), topics to delete
(``/admin/delete_topics``; a topic with a partition being reassigned
waits, queued, until the move completes, as in Kafka's
TopicDeletionManager), and requests from brokers: AlterPartition
(ISR changes proposed by leaders), ControlledShutdown, ElectLeaders,
AlterPartitionReassignments / ListPartitionReassignments (moving replicas,
reassignment.py), plus the periodic preferred-leader rebalance. A broker
whose log dir failed says so under ``/log_dir_event_notification``: the
controller sends it a LeaderAndIsr of all its replicas, and every
LeaderAndIsr answer's KAFKA_STORAGE_ERROR partitions become offline
replicas (Kafka's replicasOnOfflineDirs), which lead nothing and leave the
ISR, until the broker registers again. Each event reads what it needs
from ZooKeeper, decides (election.py), writes the new states, then sends
the requests that tell the brokers (one batch per event).

Leader epochs move on every leadership change and every ISR change the
controller makes (a broker died or is shutting down); ISR changes a leader
proposes (AlterPartition) keep the leader epoch and move only the
partition epoch, as in Kafka.

Not thread-safe: everything runs on the broker's event loop, events in one
task. Nothing outside that task mutates the context.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kcore.controller import election, wire, zk_state
from kcore.controller import zk_paths as paths
from kcore.controller.base import PREFERRED_ELECTION, IsrChange, StopReplicaPartition
from kcore.controller.channel import ControllerChannel
from kcore.controller.event_manager import ControllerEventManager
from kcore.controller.reassignment import ReplicaAssignment, reassignment_leader, validate_target
from kcore.metadata import (
    NO_LEADER,
    NO_TOPIC_ID,
    BrokerInfo,
    PartitionState,
    TopicInfo,
    TopicPartition,
    topic_id_to_string,
)
from kcore.metadata_store.zk_client import NoNodeError, Watch, ZkClient
from kcore.protocol.api_keys import INTER_BROKER_VERSIONS, ApiKey
from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

# How long the controller's own controlled shutdown waits for the brokers to
# answer what it decided (_delivered_before_leaving): ~1 ms on a LAN; a
# broker that died and is not yet out of the live set holds it this long.
OWN_SHUTDOWN_DELIVERY_WAIT_S = 5.0


@dataclass(frozen=True)
class ControllerConfig:
    unclean_leader_election: bool = False
    auto_leader_rebalance: bool = True
    leader_imbalance_check_interval_s: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10


@dataclass
class RequestBatch:
    """What one event tells the brokers (Kafka's ControllerBrokerRequestBatch);
    a partition named twice is sent once, in its latest state."""
    leader_and_isr: dict[int, dict[TopicPartition, PartitionState]] = field(default_factory=dict)
    stop_replica: dict[int, list[StopReplicaPartition]] = field(default_factory=dict)
    metadata: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    deleted: list[PartitionState] = field(default_factory=list)
    metadata_all_to: set[int] = field(default_factory=set)  # brokers that get every partition

    def tell(self, broker_id: int, state: PartitionState) -> None:
        self.leader_and_isr.setdefault(broker_id, {})[state.topic_partition] = state

    def tell_replicas(self, state: PartitionState, live: Iterable[int]) -> None:
        for replica in state.replicas:
            if replica in live:
                self.tell(replica, state)
        self.metadata[state.topic_partition] = state


class ActiveController:
    def __init__(self, zk: ZkClient, broker_id: int, config: ControllerConfig,
                 unclean_allowed: Callable[[str], bool] | None = None):
        self.zk = zk
        self.broker_id = broker_id
        self.config = config
        self.unclean_allowed = unclean_allowed or (lambda topic: config.unclean_leader_election)
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.states: dict[TopicPartition, PartitionState] = {}
        self.shutting_down: set[int] = set()
        # Broker -> its replicas in failed log dirs (Kafka's replicasOnOfflineDirs).
        self.offline_replicas: dict[int, set[TopicPartition]] = {}
        # Topics whose deletion waits for a reassignment of one of their
        # partitions to complete (Kafka's topicsIneligibleForDeletion).
        self.topics_to_delete: set[str] = set()
        self.epoch = zk_state.ControllerEpoch(0, -1)
        self.channel = ControllerChannel(broker_id)
        self.writer: zk_state.StateWriter | None = None
        self._events = ControllerEventManager(self._resign)
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self.active = False
        self.on_resign: Callable[[], None] | None = None

    @property
    def _state_writer(self) -> zk_state.StateWriter:
        """The writer of this controller's epoch, made by start()."""
        assert self.writer is not None
        return self.writer

    # -- office --------------------------------------------------------------------------------
    async def start(self, epoch: zk_state.ControllerEpoch) -> None:
        """Take office at ``epoch``, won with /controller
        (zk_state.register_controller)."""
        self.epoch = epoch
        self.writer = zk_state.StateWriter(self.zk, self.epoch)
        self.active = True
        log.info("broker %d is the controller (epoch %d)", self.broker_id, self.epoch.epoch)
        self._events.start()
        self._events.post(self._on_startup)

    def stop(self) -> None:
        """Leave office: no more decisions, no more requests."""
        if not self.active:
            return
        self.active = False
        for watch in [*self._watches, *self._topic_watches.values()]:
            watch.cancel()
        self._watches, self._topic_watches = [], {}
        self._events.close()
        self.channel.close()
        log.info("broker %d is no longer the controller", self.broker_id)

    # -- requests from brokers, each an event awaited by its caller ----------------------------
    async def alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        return await self._events.call(self._on_alter_partition, broker_id, broker_epoch, items)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int
                                  ) -> tuple[int, list[TopicPartition]]:
        return await self._events.call(self._on_controlled_shutdown, broker_id, broker_epoch)

    async def elect_leaders(self, election_type: int, partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        return await self._events.call(self._on_elect_leaders, election_type, partitions)

    async def alter_reassignments(self, items: Sequence[tuple[TopicPartition, list[int] | None]],
                                  allow_replication_factor_change: bool = True
                                  ) -> dict[TopicPartition, tuple[int, str | None]]:
        return await self._events.call(self._on_alter_reassignments, items,
                                       allow_replication_factor_change)

    async def list_reassignments(self, partitions: Sequence[TopicPartition] | None
                                 ) -> dict[TopicPartition, ReplicaAssignment]:
        return await self._events.call(self._on_list_reassignments, partitions)

    def _resign(self, reason: zk_state.ControllerMovedError) -> None:
        log.warning("controller %d resigns: %s", self.broker_id, reason)
        callback = self.on_resign
        self.stop()
        if callback is not None:
            callback()

    # -- startup (failover) ------------------------------------------------------------------
    async def _on_startup(self) -> None:
        self._watches.append(await self.zk.watch_children(
            paths.BROKER_IDS, lambda children: self._events.post(self._on_broker_change)))
        self._watches.append(await self.zk.watch_children(
            paths.TOPICS, lambda children: self._events.post(self._on_topic_change)))
        self._watches.append(await self.zk.watch_children(
            paths.DELETE_TOPICS, lambda children: self._events.post(self._on_topic_deletion)))
        self._watches.append(await self.zk.watch_children(
            paths.LOG_DIR_EVENTS,
            lambda children: self._events.post(self._on_log_dir_event) if children else None))
        self.brokers = await zk_state.read_brokers(self.zk)
        for broker in self.brokers.values():
            self.channel.add_broker(broker)
        for name in await self.zk.get_children(paths.TOPICS):
            await self._load_topic(name)
        batch = RequestBatch(metadata_all_to=set(self.brokers))
        await self._create_missing_states(list(self.topics), batch)
        await self._take_offline_replicas(batch)
        for state in self.states.values():
            batch.tell_replicas(state, self.brokers)
        self._send(batch)
        await self._resume_reassignments()
        if self.config.auto_leader_rebalance:
            self._schedule_rebalance()

    async def _take_offline_replicas(self, batch: RequestBatch) -> None:
        """Kafka's onControllerFailover: replicas on brokers that are not
        live are offline. A broker that died before this controller took
        office (the old controller itself, say) is still in the ISRs
        ZooKeeper holds: it leaves them, and its leaderships move, as if
        its death were an event of this office. Left in an ISR, it would
        count as in sync for a reassignment that moves to it, and for a
        leader election."""
        offline = {r for state in self.states.values() for r in state.replicas} - set(self.brokers)
        if offline:
            log.info("brokers %s are not live: their replicas are offline", sorted(offline))
        await self._remove_replicas(offline, batch)
        await self._elect_offline(batch)

    async def _load_topic(self, name: str) -> None:
        topic = await zk_state.read_topic(self.zk, name)
        if topic is None:
            return
        if topic.topic_id == NO_TOPIC_ID:
            # Written by a tool or broker from before topic ids (Kafka < 2.8):
            # the controller gives it one, once, as Kafka's does on upgrade.
            topic.topic_id = uuid.uuid4()
            await self._state_writer.write_assignment(topic)
            log.info("topic %s had no id: it is %s now", name, topic_id_to_string(topic.topic_id))
        self.topics[name] = topic
        self.states.update(await zk_state.read_partition_states(self.zk, topic))
        if name not in self._topic_watches:
            self._topic_watches[name] = await self.zk.watch_data(
                paths.topic_path(name), lambda data, stat: self._events.post(self._on_partition_change, name))

    # -- brokers -------------------------------------------------------------------------------
    async def _on_broker_change(self) -> None:
        current = await zk_state.read_brokers(self.zk)
        dead = {b for b in self.brokers if b not in current
                or current[b].broker_epoch != self.brokers[b].broker_epoch}
        new = {b for b in current if b not in self.brokers or b in dead}
        if not dead and not new and current == self.brokers:
            return
        for broker_id in dead:
            self.channel.remove_broker(broker_id)
        for broker_id in dead | new:  # a new registration starts with every dir online
            self.offline_replicas.pop(broker_id, None)
        self.brokers = current
        self.shutting_down = {b for b in self.shutting_down if b in current and b not in dead}
        for broker_id in new:
            self.channel.add_broker(current[broker_id])
        if dead:
            log.info("brokers %s left the cluster", sorted(dead))
        if new:
            log.info("brokers %s joined the cluster", sorted(new))
        batch = RequestBatch(metadata_all_to=set(new))
        # A broker that restarted within its session timeout (new epoch, same
        # id) lost its in-memory state: like Kafka, treat it as gone first
        # (its leaderships move, it leaves ISRs), then as new (it follows,
        # catches up and rejoins).
        await self._remove_replicas(dead, batch)
        await self._elect_offline(batch, excluded=dead)
        if new & dead:
            await self._elect_offline(batch)
        for state in self.states.values():
            for replica in new & set(state.replicas):
                batch.tell(replica, self.states[state.topic_partition])
        self._send(batch, metadata_to_all=True)

    async def _remove_replicas(self, gone: set[int], batch: RequestBatch) -> None:
        """Brokers that died: leaders are replaced (_elect_offline), followers
        leave the ISR of partitions that still have a leader."""
        if not gone:
            return
        changes = []
        for state in self.states.values():
            if state.leader in gone or not gone & set(state.isr):
                continue
            isr = tuple(r for r in state.isr if r not in gone)
            changes.append((state, replace(state, isr=isr, leader_epoch=state.leader_epoch + 1,
                                           controller_epoch=self.epoch.epoch)))
        await self._write(changes, batch)

    async def _elect_offline(self, batch: RequestBatch,
                             excluded: frozenset[int] | set[int] = frozenset()) -> None:
        """Partitions whose leader is not live (or who have none) get one
        from their live ISR, or unclean where allowed; ``excluded`` brokers
        count as not live. A leader that is shutting down but still
        registered is moved if it can be, and otherwise keeps leading (as
        Kafka's election, failing, writes nothing): a cluster stopping
        whole keeps its last leaders instead of going offline first."""
        changes = []
        registered = set(self.brokers) - set(excluded)
        live = registered - self.shutting_down
        for state in self.states.values():
            online = self._online(state.topic_partition, live)
            if state.leader in online:
                continue
            result = election.offline_partition(state.replicas, state.isr, online,
                                                self.unclean_allowed(state.topic))
            if result.leader == NO_LEADER and (state.leader == NO_LEADER
                                               or state.leader in registered):
                continue
            if result.unclean:
                log.warning("%s-%d: unclean leader election of %d; acknowledged data may be lost",
                            state.topic, state.partition, result.leader)
            changes.append((state, replace(state, leader=result.leader, isr=result.isr,
                                           leader_epoch=state.leader_epoch + 1,
                                           controller_epoch=self.epoch.epoch)))
        await self._write(changes, batch)

    # -- topics and partitions ----------------------------------------------------------------
    async def _on_topic_change(self) -> None:
        names = set(await self.zk.get_children(paths.TOPICS))
        added = sorted(names - set(self.topics))
        for name in sorted(set(self.topics) - names):
            self._forget_topic(name)
        if not added:
            return
        for name in added:
            await self._load_topic(name)
        batch = RequestBatch()
        await self._create_missing_states(added, batch)
        self._send(batch, metadata_to_all=True)

    async def _on_partition_change(self, name: str) -> None:
        if name not in self.topics:
            return
        topic = await zk_state.read_topic(self.zk, name)
        if topic is None or topic.num_partitions <= self.topics[name].num_partitions:
            return
        if topic.topic_id == NO_TOPIC_ID:  # rewritten by a writer that knows no ids
            topic.topic_id = self.topics[name].topic_id
            await self._state_writer.write_assignment(topic)
        self.topics[name] = topic
        batch = RequestBatch()
        await self._create_missing_states([name], batch)
        self._send(batch, metadata_to_all=True)

    async def _create_missing_states(self, names: Sequence[str], batch: RequestBatch) -> None:
        live = set(self.brokers) - self.shutting_down
        new_states = []
        for name in names:
            topic = self.topics.get(name)
            if topic is None:
                continue
            for index, replicas in sorted(topic.assignment.items()):
                if (name, index) in self.states:
                    continue
                result = election.initial(replicas, live)
                new_states.append(PartitionState(name, index, result.leader, 0, result.isr,
                                                 tuple(replicas), 0, self.epoch.epoch,
                                                 topic.topic_id))
        if not new_states:
            return
        for state in await self._state_writer.create(new_states):
            self.states[state.topic_partition] = state
            batch.tell_replicas(state, self.brokers)
        missing = [s for s in new_states if s.topic_partition not in self.states]
        for name in {s.topic for s in missing}:  # existed already: take what ZooKeeper has
            self.states.update(await zk_state.read_partition_states(self.zk, self.topics[name]))

    async def _on_topic_deletion(self) -> None:
        try:
            names = await self.zk.get_children(paths.DELETE_TOPICS)
        except NoNodeError:
            return
        for name in sorted(names):
            moving = self._reassigning_partitions(name)
            if not moving:
                await self._delete_topic(name)
            elif name not in self.topics_to_delete:
                self.topics_to_delete.add(name)
                log.info("topic %s is queued for deletion until the reassignment of partitions "
                         "%s completes", name, moving)

    def _reassigning_partitions(self, name: str) -> list[int]:
        topic = self.topics.get(name)
        if topic is None:
            return []
        return sorted({*topic.adding_replicas, *topic.removing_replicas})

    async def _delete_topic(self, name: str) -> None:
        topic = self.topics.get(name)
        batch = RequestBatch()
        if topic is not None:
            states = [s for s in self.states.values() if s.topic == name]
            for state in states:
                for replica in state.replicas:
                    if replica in self.brokers:
                        batch.stop_replica.setdefault(replica, []).append(
                            StopReplicaPartition(name, state.partition, -1, True))
            batch.deleted.extend(states)
        for path in (paths.topic_path(name), paths.topic_config_path(name),
                     paths.delete_topic_path(name)):
            try:
                await self.zk.delete(path, recursive=True)
            except NoNodeError:
                pass
        self._forget_topic(name)
        self._send(batch, metadata_to_all=True)
        log.info("topic %s deleted", name)

    def _forget_topic(self, name: str) -> None:
        self.topics.pop(name, None)
        self.topics_to_delete.discard(name)
        for key in [k for k in self.states if k[0] == name]:
            del self.states[key]
        watch = self._topic_watches.pop(name, None)
        if watch is not None:
            watch.cancel()

    # -- requests from brokers -----------------------------------------------------------------
    async def _on_alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                                  ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        """(top-level error, per partition (error, state as now))."""
        broker = self.brokers.get(broker_id)
        if broker is None or broker.broker_epoch != broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH, {}
        results: dict[TopicPartition, tuple[int, PartitionState | None]] = {}
        changes = []
        for key, leader_epoch, new_isr, partition_epoch in items:
            state = self.states.get(key)
            code = self._check_isr_change(state, broker_id, leader_epoch, new_isr, partition_epoch)
            if code != ErrorCode.NONE or state is None:
                results[key] = (code, state)
                continue
            changes.append((state, replace(state, isr=tuple(new_isr),
                                           controller_epoch=self.epoch.epoch)))
        batch = RequestBatch()
        for state in await self._write(changes, batch, tell_replicas=False):
            results[state.topic_partition] = (ErrorCode.NONE, state)
            # A grown ISR may hold the whole target of a move now.
            assignment = self._replica_assignment(state.topic_partition)
            if assignment.is_being_reassigned and assignment.is_complete(state.isr):
                await self._complete_reassignment(state.topic_partition, assignment, batch)
        for old, _ in changes:
            results.setdefault(old.topic_partition, (ErrorCode.INVALID_UPDATE_VERSION, old))
        self._send(batch, metadata_to_all=True)
        return ErrorCode.NONE, results

    def _check_isr_change(self, state: PartitionState | None, broker_id: int, leader_epoch: int,
                          new_isr: list[int], partition_epoch: int) -> int:
        if state is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if state.leader != broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if leader_epoch != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if partition_epoch != state.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        if broker_id not in new_isr or not set(new_isr) <= set(state.replicas):
            return ErrorCode.INVALID_REQUEST
        if any(r not in self.brokers or r in self.shutting_down
               or state.topic_partition in self.offline_replicas.get(r, ())
               for r in new_isr if r not in state.isr):
            return ErrorCode.INELIGIBLE_REPLICA
        return ErrorCode.NONE

    async def _on_controlled_shutdown(self, broker_id: int, broker_epoch: int
                                      ) -> tuple[int, list[TopicPartition]]:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.broker_epoch != broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH, []
        self.shutting_down.add(broker_id)
        live = set(self.brokers)
        changes, stopped = [], []
        for state in self.states.values():
            if broker_id not in state.replicas or len(state.replicas) == 1:
                continue
            if state.leader == broker_id:
                result = election.controlled_shutdown(state.replicas, state.isr, live,
                                                      self.shutting_down)
                if result.leader == NO_LEADER:
                    continue
                changes.append((state, replace(state, leader=result.leader, isr=result.isr,
                                               leader_epoch=state.leader_epoch + 1,
                                               controller_epoch=self.epoch.epoch)))
            else:  # Kafka stops every replica it follows, in the ISR or not
                if broker_id in state.isr:
                    isr = tuple(r for r in state.isr if r != broker_id)
                    changes.append((state, replace(state, isr=isr, leader_epoch=state.leader_epoch + 1,
                                                   controller_epoch=self.epoch.epoch)))
                stopped.append(state)
        batch = RequestBatch()
        await self._write(changes, batch)
        for state in stopped:
            batch.stop_replica.setdefault(broker_id, []).append(
                StopReplicaPartition(state.topic, state.partition, -1, False))
        self._send(batch, metadata_to_all=True)
        if broker_id == self.broker_id:
            await self._delivered_before_leaving()
        remaining = sorted(key for key, state in self.states.items()
                           if state.leader == broker_id and len(state.replicas) > 1)
        log.info("controlled shutdown of broker %d: %d leaderships moved, %d remain",
                 broker_id, sum(1 for old, _ in changes if old.leader == broker_id), len(remaining))
        return ErrorCode.NONE, remaining

    async def _delivered_before_leaving(self) -> None:
        """This broker's own controlled shutdown: it leaves office as soon
        as it is answered, and the channel closes with it, dropping what it
        still holds. What the shutdown decided must arrive first. Its own
        StopReplica: else its followers keep fetching until it exits, a
        leader that sees one caught up proposes it back into the ISR, and
        with no controller left to answer that change the high watermark
        waits on the stopped broker. The new leaders' LeaderAndIsr to the
        other replicas: else a follower keeps fetching from this broker,
        and the new leader's high watermark waits on it. With the whole
        cluster stopping at once no controller follows to repair either:
        10 s of unanswered acks=all writes. Brokers shutting down too are
        not waited for: they stop their replicas themselves, and one that
        has exited never answers. Bounded (module constant)."""
        staying = [b for b in self.channel.senders
                   if b == self.broker_id or b not in self.shutting_down]
        try:
            async with asyncio.timeout(OWN_SHUTDOWN_DELIVERY_WAIT_S):
                await self.channel.drained(staying)
        except TimeoutError:
            waiting = [b for b in staying if b in self.channel.senders and self.channel.senders[b].pending]
            log.warning("brokers %s did not answer the controlled shutdown's requests within %g s",
                        waiting, OWN_SHUTDOWN_DELIVERY_WAIT_S)

    async def _on_elect_leaders(self, election_type: int,
                                partitions: Sequence[TopicPartition] | None
                                ) -> dict[TopicPartition, tuple[int, str | None]]:
        keys = list(self.states) if partitions is None else list(partitions)
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        changes = []
        live = set(self.brokers) - self.shutting_down
        for key in keys:
            state = self.states.get(key)
            if state is None:
                results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                continue
            online = self._online(key, live)
            if election_type == PREFERRED_ELECTION:
                result = election.preferred_replica(state.replicas, state.isr, online)
                if state.leader == state.replicas[0]:
                    results[key] = (ErrorCode.ELECTION_NOT_NEEDED, None)
                    continue
                missing = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            else:
                if state.leader in online:
                    results[key] = (ErrorCode.ELECTION_NOT_NEEDED, None)
                    continue
                result = election.offline_partition(state.replicas, state.isr, online, True)
                missing = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            if result.leader == NO_LEADER:
                results[key] = (missing, f"no eligible leader among {list(state.replicas)}")
                continue
            changes.append((state, replace(state, leader=result.leader, isr=result.isr,
                                           leader_epoch=state.leader_epoch + 1,
                                           controller_epoch=self.epoch.epoch)))
        batch = RequestBatch()
        for state in await self._write(changes, batch):
            results[state.topic_partition] = (ErrorCode.NONE, None)
        for old, _ in changes:
            results.setdefault(old.topic_partition, (ErrorCode.UNKNOWN_SERVER_ERROR,
                                                     "the state changed concurrently"))
        self._send(batch, metadata_to_all=True)
        return results

    # -- partition reassignment (KIP-455, reassignment.py) --------------------------------
    def _replica_assignment(self, key: TopicPartition) -> ReplicaAssignment:
        topic = self.topics.get(key[0])
        if topic is None:
            return ReplicaAssignment(())
        return ReplicaAssignment(tuple(topic.assignment.get(key[1], ())),
                                 tuple(topic.adding_replicas.get(key[1], ())),
                                 tuple(topic.removing_replicas.get(key[1], ())))

    async def _on_alter_reassignments(self, items: Sequence[tuple[TopicPartition, list[int] | None]],
                                      allow_replication_factor_change: bool = True
                                      ) -> dict[TopicPartition, tuple[int, str | None]]:
        """Start, replace or (None target) cancel moves; (error, message) each."""
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        live = set(self.brokers) - self.shutting_down
        for key, target in items:
            if key not in self.states or key[0] not in self.topics:
                results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"partition {key[0]}-{key[1]} does not exist")
                continue
            if key[0] in self.topics_to_delete:  # Kafka: as if it were gone already
                results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"topic {key[0]} is queued for deletion")
                continue
            current = self._replica_assignment(key)
            if target is None:
                if not current.is_being_reassigned:
                    results[key] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                    f"no reassignment of {key[0]}-{key[1]} to cancel")
                    continue
                target = list(current.origin)
            else:
                refusal = validate_target(current, target, live, allow_replication_factor_change)
                if refusal is not None:
                    results[key] = refusal
                    continue
            batch = RequestBatch()
            await self._reassign(key, current.reassign_to(target), batch)
            self._send(batch, metadata_to_all=True)
            results[key] = (ErrorCode.NONE, None)
        return results

    async def _on_list_reassignments(self, partitions: Sequence[TopicPartition] | None
                                     ) -> dict[TopicPartition, ReplicaAssignment]:
        keys = sorted(self.states) if partitions is None else list(partitions)
        found = {key: self._replica_assignment(key) for key in keys}
        return {key: a for key, a in found.items() if a.is_being_reassigned}

    async def _reassign(self, key: TopicPartition, new: ReplicaAssignment,
                        batch: RequestBatch) -> None:
        """Kafka's onPartitionReassignment: record RS/AR/RR, drop replicas a
        replaced move had added, then either finish at once (TRS already in
        sync) or bump the leader epoch so every RS member learns RS and
        the new ones start fetching."""
        unneeded = [r for r in self._replica_assignment(key).replicas if r not in new.replicas]
        await self._set_assignment(key, new)
        self._stop_replicas(key, unneeded, batch)
        state = self.states[key]
        if new.is_complete(state.isr):
            await self._complete_reassignment(key, new, batch)
            return
        log.info("%s-%d: reassigning from %s to %s (adding %s, removing %s)", key[0], key[1],
                 list(new.origin), list(new.target), list(new.adding), list(new.removing))
        await self._write([(state, self._moved_state(state, new.replicas, new.replicas))], batch)

    async def _complete_reassignment(self, key: TopicPartition, assignment: ReplicaAssignment,
                                     batch: RequestBatch) -> None:
        """Every TRS member is in sync: lead from TRS, shrink RS and ISR to
        TRS, delete the removed replicas, record RS = TRS."""
        state = self.states[key]
        target = assignment.target
        written = await self._write([(state, self._moved_state(state, target, target))], batch)
        if not written:
            return  # the state changed behind us; the next ISR change retries
        self._stop_replicas(key, list(assignment.removing), batch)
        await self._set_assignment(key, ReplicaAssignment(target))
        log.info("%s-%d: reassignment to %s complete", key[0], key[1], list(target))
        if key[0] in self.topics_to_delete:
            # A later event, so this one's requests (which name the
            # partition) reach the brokers before the StopReplicas that
            # delete it.
            self._events.post(self._on_topic_deletion)

    def _moved_state(self, state: PartitionState, replicas: tuple[int, ...],
                     may_lead: tuple[int, ...]) -> PartitionState:
        """``state`` with these replicas (the ISR cut to them), a leader from
        ``may_lead`` if the current one is not there, and a new leader epoch."""
        live = set(self.brokers) - self.shutting_down
        isr = tuple(r for r in state.isr if r in replicas)
        leader = state.leader
        if leader not in may_lead or leader not in live:
            leader = reassignment_leader(may_lead, isr, live)
        return replace(state, leader=leader, isr=isr, replicas=replicas,
                       leader_epoch=state.leader_epoch + 1, controller_epoch=self.epoch.epoch)

    def _stop_replicas(self, key: TopicPartition, replicas: Iterable[int],
                       batch: RequestBatch) -> None:
        for replica in replicas:
            if replica in self.brokers:
                batch.stop_replica.setdefault(replica, []).append(
                    StopReplicaPartition(key[0], key[1], -1, True))

    async def _set_assignment(self, key: TopicPartition, assignment: ReplicaAssignment) -> None:
        topic = self.topics[key[0]]
        topic.assignment[key[1]] = list(assignment.replicas)
        for lists, replicas in ((topic.adding_replicas, assignment.adding),
                                (topic.removing_replicas, assignment.removing)):
            if replicas:
                lists[key[1]] = list(replicas)
            else:
                lists.pop(key[1], None)
        await self._state_writer.write_assignment(topic)

    async def _resume_reassignments(self) -> None:
        """A new controller finishes the moves its predecessor started (the
        startup LeaderAndIsr already told every RS member)."""
        batch = RequestBatch()
        for key, state in list(self.states.items()):
            assignment = self._replica_assignment(key)
            if assignment.is_being_reassigned:
                log.info("%s-%d: resuming the reassignment to %s", key[0], key[1],
                         list(assignment.target))
                if assignment.is_complete(state.isr):
                    await self._complete_reassignment(key, assignment, batch)
        if batch.metadata:
            self._send(batch, metadata_to_all=True)

    # -- failed log dirs -----------------------------------------------------------------------
    def _online(self, key: TopicPartition, live: set[int]) -> set[int]:
        """The live brokers whose replica of ``key`` is not in a failed dir."""
        return {b for b in live if key not in self.offline_replicas.get(b, ())}

    async def _on_log_dir_event(self) -> None:
        """Brokers named under /log_dir_event_notification get a
        LeaderAndIsr of all their replicas; their answers say which are
        offline (``_on_leader_and_isr_response``). Kafka's
        processLogDirEventNotification."""
        try:
            children = await self.zk.get_children(paths.LOG_DIR_EVENTS)
        except NoNodeError:
            return
        brokers = set()
        for child in children:
            path = f"{paths.LOG_DIR_EVENTS}/{child}"
            try:
                data, _ = await self.zk.get(path)
                brokers.add(paths.decode_log_dir_event(data))
                await self.zk.delete(path)
            except (NoNodeError, ValueError, KeyError):
                continue
        batch = RequestBatch()
        for state in self.states.values():
            for broker_id in brokers & set(state.replicas) & set(self.brokers):
                batch.tell(broker_id, state)
        log.info("log dirs failed on brokers %s: asking them about %d replicas", sorted(brokers),
                 sum(len(states) for states in batch.leader_and_isr.values()))
        self._send(batch)

    def _leader_and_isr_answered(self, broker_id: int, response: Any) -> None:
        self._events.post(self._on_leader_and_isr_response, broker_id, response)

    async def _on_leader_and_isr_response(self, broker_id: int, response: Any) -> None:
        """KAFKA_STORAGE_ERROR answers are replicas in failed log dirs, NONE
        answers replicas that are fine (Kafka's
        processLeaderAndIsrResponseReceived); new offline replicas lose
        their leadership and leave the ISR."""
        if response is None or response.error_code != ErrorCode.NONE or broker_id not in self.brokers:
            return
        offline = self.offline_replicas.setdefault(broker_id, set())
        before = set(offline)
        for key, error_code in self._partition_errors(response):
            if error_code == ErrorCode.KAFKA_STORAGE_ERROR:
                offline.add(key)
            elif error_code == ErrorCode.NONE:
                offline.discard(key)
        if offline - before:
            await self._replicas_offline(broker_id, offline - before)

    def _partition_errors(self, response: Any) -> list[tuple[TopicPartition, int]]:
        """((topic, partition), error) of a LeaderAndIsr answer: one list
        named by topic up to v4, grouped by topic id from v5 (an id this
        controller no longer knows is a deleted topic's, skipped)."""
        if response.partition_errors:
            return [((item.topic_name, item.partition_index), item.error_code)
                    for item in response.partition_errors]
        names = {info.topic_id: name for name, info in self.topics.items()}
        return [((names[topic.topic_id], item.partition_index), item.error_code)
                for topic in response.topics if topic.topic_id in names
                for item in topic.partition_errors]

    async def _replicas_offline(self, broker_id: int, keys: set[TopicPartition]) -> None:
        """Kafka's onReplicasBecomeOffline: the partitions they led get a
        leader among the other online ISR members, the others drop them
        from the ISR."""
        log.info("broker %d: %d replicas are in failed log dirs", broker_id, len(keys))
        batch = RequestBatch()
        await self._elect_offline(batch)
        changes = []
        for key in sorted(keys):
            state = self.states.get(key)
            if state is None or state.leader == broker_id or broker_id not in state.isr \
                    or state.leader == NO_LEADER:
                continue
            changes.append((state, replace(state, isr=tuple(r for r in state.isr if r != broker_id),
                                           leader_epoch=state.leader_epoch + 1,
                                           controller_epoch=self.epoch.epoch)))
        await self._write(changes, batch)
        self._send(batch, metadata_to_all=True)

    # -- preferred leader rebalance ------------------------------------------------------------
    def _schedule_rebalance(self) -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(self.config.leader_imbalance_check_interval_s, self._rebalance_due)

    def _rebalance_due(self) -> None:
        if self.active:
            self._events.post(self._on_auto_rebalance)
            self._schedule_rebalance()

    async def _on_auto_rebalance(self) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance: per preferred leader,
        if more than leader.imbalance.per.broker.percentage of its
        partitions are led by someone else, elect it where it can lead."""
        live = set(self.brokers) - self.shutting_down
        by_preferred: dict[int, list[PartitionState]] = {}
        for state in self.states.values():
            if state.replicas:
                by_preferred.setdefault(state.replicas[0], []).append(state)
        chosen: list[TopicPartition] = []
        for preferred, states in by_preferred.items():
            if preferred not in live:
                continue
            moved = [s for s in states if s.leader != preferred]
            if 100 * len(moved) / len(states) > self.config.leader_imbalance_per_broker_percentage:
                chosen.extend(s.topic_partition for s in moved if preferred in s.isr)
        if chosen:
            log.info("preferred leader rebalance of %d partitions", len(chosen))
            await self._on_elect_leaders(PREFERRED_ELECTION, chosen)

    # -- writing and telling -----------------------------------------------------------------
    async def _write(self, changes: list[tuple[PartitionState, PartitionState]],
                     batch: RequestBatch, tell_replicas: bool = True) -> list[PartitionState]:
        if not changes:
            return []
        written = await self._state_writer.update(changes)
        moved = [s for s in written if s.leader != self.states[s.topic_partition].leader]
        if moved:
            log.info("leaders changed for %d partitions: %s%s", len(moved),
                     ", ".join(f"{s.topic}-{s.partition} -> {s.leader} (epoch {s.leader_epoch})"
                               for s in moved[:5]), " ..." if len(moved) > 5 else "")
        for state in written:
            self.states[state.topic_partition] = state
            if tell_replicas:
                batch.tell_replicas(state, self.brokers)
            else:
                batch.metadata[state.topic_partition] = state
        return written

    def _send(self, batch: RequestBatch, metadata_to_all: bool = False) -> None:
        live = [self.brokers[b] for b in sorted(self.brokers)]
        epoch = self.epoch.epoch
        version = INTER_BROKER_VERSIONS
        # A broker told every partition (it joined, or this controller took
        # office) gets a FULL LeaderAndIsr, also with no partition at all:
        # it sets aside logs of topics deleted while it was away.
        full_to = {b for b in batch.metadata_all_to if b in self.brokers}
        for broker_id in sorted(full_to | set(batch.leader_and_isr)):
            states = list(batch.leader_and_isr.get(broker_id, {}).values())
            leaders = {s.leader for s in states}
            body = wire.leader_and_isr_body(self.broker_id, epoch, self.brokers[broker_id].broker_epoch,
                                            states, [self.brokers[b] for b in leaders if b in self.brokers],
                                            full=broker_id in full_to)
            self.channel.send(broker_id, ApiKey.LEADER_AND_ISR, version[ApiKey.LEADER_AND_ISR], body,
                              on_response=functools.partial(self._leader_and_isr_answered, broker_id))
        targets = set(self.brokers) if metadata_to_all else set()
        everything = list(self.states.values())
        for broker_id in sorted(targets | batch.metadata_all_to):
            if broker_id not in self.brokers:
                continue
            states = everything if broker_id in batch.metadata_all_to else list(batch.metadata.values())
            body = wire.update_metadata_body(self.broker_id, epoch, live, states, batch.deleted)
            self.channel.send(broker_id, ApiKey.UPDATE_METADATA,
                              version[ApiKey.UPDATE_METADATA], body)
        for broker_id, partitions in batch.stop_replica.items():
            body = wire.stop_replica_body(self.broker_id, epoch, self.brokers[broker_id].broker_epoch,
                                          partitions)
            self.channel.send(broker_id, ApiKey.STOP_REPLICA, version[ApiKey.STOP_REPLICA], body)

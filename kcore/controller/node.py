"""The controller of a multi-process node without ZooKeeper, run by the
node's supervisor (server/supervisor.py).

It owns what a cluster's active controller owns, for the node's processes:
which process leads each partition (one replica each: managed.py says
why), the leader epochs, and telling the processes with LeaderAndIsr,
UpdateMetadata and StopReplica, over the Kafka protocol (channel.py, wire.py),
exactly as the ZooKeeper controller tells brokers. The node's metadata file
(kcore/metadata_store/node_file.py) is its ZooKeeper: processes write topic changes there and
wake it (``on_store_changed``).

Each start of the supervisor is a new controller epoch and a new leader
epoch for every partition; a process that dies takes its partitions
offline (leader -1, so clients get LEADER_NOT_AVAILABLE and retry instead
of knocking on a closed port) until it is back, each time with a new leader
epoch. When ``num.processes`` changed since the last start, every
partition is placed again over the processes the node has now
(``prepare``, before any process starts; the supervisor then moves the
directories), so existing topics use every core too.

Not thread-safe: runs on the supervisor's event loop.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from kcore.controller import wire
from kcore.controller.base import StopReplicaPartition
from kcore.controller.channel import ControllerChannel
from kcore.metadata import NO_LEADER, BrokerInfo, PartitionState
from kcore.metadata_store.node_file import NodeState, NodeStore, assign_topic_ids
from kcore.protocol.api_keys import INTER_BROKER_VERSIONS, ApiKey

log = logging.getLogger(__name__)


class NodeController:
    def __init__(self, node_dir: Path, processes: Sequence[BrokerInfo]):
        self.store = NodeStore(node_dir)
        self.processes = {p.broker_id: p for p in processes}
        self.live: set[int] = set()
        self.state = NodeState()
        self.channel: ControllerChannel | None = None

    # -- before the processes start --------------------------------------------------------
    def prepare(self) -> dict[tuple[str, int], int]:
        """New controller epoch, new leader epochs, orphaned partitions
        reassigned; returns partition -> owning process id (where its
        directory must be)."""
        ids = sorted(self.processes)
        with self.store.updating() as state:
            state.controller_epoch += 1
            assign_topic_ids(state)
            # A new set of processes (num.processes changed): every partition
            # is placed again, so the node's existing topics use all of them.
            respread = [p.broker_id for p in state.processes] != ids
            state.processes = [self.processes[i] for i in ids]
            for name, info in state.topics.items():
                for index in range(info.num_partitions):
                    replicas = info.assignment.get(index)
                    if respread or not replicas or replicas[0] not in self.processes:
                        info.assignment[index] = [ids[index % len(ids)]]
                info.replication_factor = 1
                state.leader_epochs[name] = [e + 1 for e in state.leader_epochs.get(name, [])]
            self.state = state
        return {(name, index): replicas[0] for name, info in self.state.topics.items()
                for index, replicas in info.assignment.items()}

    # -- processes coming and going --------------------------------------------------------
    def start(self) -> None:
        self.channel = ControllerChannel(self.controller_id)

    @property
    def controller_id(self) -> int:
        """Metadata names the lowest live process as the controller (clients
        send it CreateTopics; every process takes those)."""
        return min(self.live) if self.live else min(self.processes)

    def process_up(self, broker_id: int) -> None:
        """A process listens (first start or restart): it leads its
        partitions at a new leader epoch."""
        self.live.add(broker_id)
        assert self.channel is not None
        self.channel.add_broker(self.processes[broker_id])
        owned = self._bump_epochs_of(broker_id)
        self._leader_and_isr(broker_id, owned, full=True)
        self._update_metadata(self.live - {broker_id}, owned)
        self._update_metadata({broker_id}, self.partition_states())

    async def delivered(self) -> None:
        """Every process holds what was sent to it so far (its partitions
        and the node's brokers): before that, a process would answer
        Metadata with no brokers, and librdkafka gives up on finding the
        controller for its whole request timeout."""
        if self.channel is not None:
            await self.channel.drained()

    def process_down(self, broker_id: int) -> None:
        self.live.discard(broker_id)
        if self.channel is not None:
            self.channel.remove_broker(broker_id)
        owned = self._bump_epochs_of(broker_id)
        self._update_metadata(self.live, owned)

    def _bump_epochs_of(self, broker_id: int) -> list[PartitionState]:
        with self.store.updating() as state:
            for name, info in state.topics.items():
                epochs = state.leader_epochs.setdefault(name, [0] * info.num_partitions)
                for index, replicas in info.assignment.items():
                    if replicas[0] == broker_id and index < len(epochs):
                        epochs[index] += 1
            self.state = state
        return [s for s in self.partition_states() if s.replicas[0] == broker_id]

    # -- topic changes the processes wrote ---------------------------------------------------
    def on_store_changed(self) -> None:
        """Tell the processes what the file says now: new topics and
        partitions, deletions, config changes (every process rereads the
        file on UpdateMetadata)."""
        before = {state.topic_partition: state for state in self.partition_states()}
        self.state = self.store.read()
        for name in sorted(self.state.deleting):
            self._delete(name, [s for s in before.values() if s.topic == name])
        after = self.partition_states()
        added = [s for s in after if s.topic_partition not in before]
        by_owner: dict[int, list[PartitionState]] = {}
        for state in added:
            by_owner.setdefault(state.replicas[0], []).append(state)
        for owner, states in by_owner.items():
            if owner in self.live:
                self._leader_and_isr(owner, states)
        self._update_metadata(self.live, after)

    def _delete(self, name: str, states: list[PartitionState]) -> None:
        stops: dict[int, list[StopReplicaPartition]] = {}
        for partition in states:
            stops.setdefault(partition.replicas[0], []).append(
                StopReplicaPartition(name, partition.partition, -1, True))
        self._update_metadata(self.live, [], deleted=states)
        assert self.channel is not None
        for owner, partitions in stops.items():
            if owner in self.live:
                body = wire.stop_replica_body(self.controller_id, self.state.controller_epoch, -1,
                                              partitions)
                self.channel.send(owner, ApiKey.STOP_REPLICA,
                                  INTER_BROKER_VERSIONS[ApiKey.STOP_REPLICA], body)
        with self.store.updating() as state:
            state.topics.pop(name, None)
            state.leader_epochs.pop(name, None)
            state.deleting.discard(name)
            self.state = state
        log.info("topic %s deleted", name)

    # -- the model and the requests --------------------------------------------------------------
    def partition_states(self) -> list[PartitionState]:
        states = []
        for name, info in self.state.topics.items():
            if name in self.state.deleting:
                continue
            epochs = self.state.leader_epochs.get(name, [])
            for index in range(info.num_partitions):
                replicas = tuple(info.assignment.get(index, [min(self.processes)]))
                epoch = epochs[index] if index < len(epochs) else 0
                leader = replicas[0] if replicas[0] in self.live else NO_LEADER
                states.append(PartitionState(name, index, leader, epoch, replicas, replicas,
                                             epoch, self.state.controller_epoch, info.topic_id))
        return states

    def _leader_and_isr(self, broker_id: int, states: list[PartitionState],
                        full: bool = False) -> None:
        """``full``: ``states`` are every partition the process owns."""
        if (not states and not full) or self.channel is None:
            return
        leaders = [self.processes[broker_id]]
        body = wire.leader_and_isr_body(self.controller_id, self.state.controller_epoch, -1,
                                        states, leaders, full)
        self.channel.send(broker_id, ApiKey.LEADER_AND_ISR,
                          INTER_BROKER_VERSIONS[ApiKey.LEADER_AND_ISR], body)

    def _update_metadata(self, targets: set[int], states: list[PartitionState],
                         deleted: list[PartitionState] | None = None) -> None:
        if self.channel is None:
            return
        brokers = [self.processes[b] for b in sorted(self.live)]
        body = wire.update_metadata_body(self.controller_id, self.state.controller_epoch,
                                         brokers, states, deleted or [])
        for broker_id in sorted(targets):
            self.channel.send(broker_id, ApiKey.UPDATE_METADATA,
                              INTER_BROKER_VERSIONS[ApiKey.UPDATE_METADATA], body)

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()

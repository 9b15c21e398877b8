"""The controller seam of one broker process of a multi-process node
(``num.processes`` > 1, no ZooKeeper).

The node's metadata file (kcore/metadata_store/node_file.py) plays ZooKeeper's part: like a
Kafka broker writing ``/brokers/topics/T``, a process writes topic changes
into it under its lock, then wakes the node's supervisor (SIGUSR1), the
node's controller (node.py), which tells every process what changed with
the controller-to-broker requests. Each process keeps a copy of the file's
topics for ``topic()`` and reloads it whenever the file changed and the
controller sent something (``refresh_topics``), so config changes reach
every process.

A node keeps one replica of each partition: its processes share a disk,
so copies among them would add work, not durability (a cluster of nodes
replicates; see zookeeper.connect). Internal topics get one replica too.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import logging
import os
import signal
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kcore.controller.base import ControllerEvents, IsrChange
from kcore.controller.local import META_PROPERTIES, read_meta_properties
from kcore.controller.placement import assign_replicas
from kcore.controller.reassignment import ReplicaAssignment, fixed_replicas_answer
from kcore.metadata import BrokerInfo, PartitionState, TopicError, TopicInfo, TopicPartition, validate_topic_name
from kcore.metadata_store.node_file import NodeState, NodeStore
from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ManagedController:
    def __init__(self, node_dir: Path, data_dir: Path, broker: BrokerInfo,
                 events: ControllerEvents, supervisor_pid: int):
        self.store = NodeStore(node_dir)
        self.broker = broker
        self.broker_id = broker.broker_id
        self.broker_epoch = -1
        self.events = events
        self.supervisor_pid = supervisor_pid
        self.cluster_id = read_meta_properties(Path(data_dir) / META_PROPERTIES).get("cluster.id", "")
        self._state = NodeState()
        self._version = (0, 0)

    async def start(self) -> None:
        self._reload()

    async def register(self) -> None:
        return None  # the supervisor sees this process listen and tells it everything

    async def shutdown(self) -> None:
        return None

    # -- queries ---------------------------------------------------------------------------
    async def propagate_log_dir_event(self) -> None:
        """No other replica to lead a failed dir's partitions: nothing to tell."""

    def topic(self, name: str) -> TopicInfo | None:
        return self._state.topics.get(name) if name not in self._state.deleting else None

    def topic_names(self) -> list[str]:
        return sorted(n for n in self._state.topics if n not in self._state.deleting)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((info for name, info in self._state.topics.items()
                     if info.topic_id == topic_id and name not in self._state.deleting), None)

    async def refresh_topics(self, names: Sequence[str]) -> None:
        """Reload the node's metadata when it changed; tell the broker of
        config changes."""
        if self.store.version() != self._version:
            before = {n: dict(t.configs) for n, t in self._state.topics.items()}
            self._reload()
            for name, info in self._state.topics.items():
                if name in before and before[name] != info.configs:
                    self.events.on_topic_config_change(name)

    def _reload(self) -> None:
        self._version = self.store.version()
        self._state = self.store.read()

    # -- changes, written into the node's metadata ---------------------------------------
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str],
                           assignment: dict[int, list[int]] | None = None,
                           validate_only: bool = False) -> TopicInfo:
        validate_topic_name(name)
        try:
            info = self._create(name, num_partitions, replication_factor, configs, assignment,
                                validate_only)
        except _Discard as discarded:
            return discarded.info
        self._changed()
        return info

    def _create(self, name: str, num_partitions: int, replication_factor: int,
                configs: dict[str, str], assignment: dict[int, list[int]] | None,
                validate_only: bool) -> TopicInfo:
        with self.store.updating() as state:
            if name in state.topics:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS,
                                 f"topic {name!r} already exists" +
                                 (" (marked for deletion)" if name in state.deleting else ""))
            info = TopicInfo(name, uuid.uuid4(), num_partitions, replication_factor, dict(configs))
            if info.is_internal:
                info.replication_factor = replication_factor = 1
            _check_one_replica(replication_factor)
            info.assignment = (_checked(assignment, state) if assignment
                               else assign_replicas(num_partitions, 1, state.processes))
            info.num_partitions = len(info.assignment)
            if validate_only:
                raise _Discard(info)
            state.topics[name] = info
            state.leader_epochs[name] = [0] * info.num_partitions
        return info

    async def delete_topic(self, name: str) -> None:
        with self.store.updating() as state:
            if name not in state.topics or name in state.deleting:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"topic {name!r} does not exist")
            state.deleting.add(name)
        self._changed()

    async def create_partitions(self, name: str, total: int,
                                assignment: list[list[int]] | None = None,
                                validate_only: bool = False) -> TopicInfo:
        try:
            info = self._add_partitions(name, total, assignment, validate_only)
        except _Discard as discarded:
            return discarded.info
        self._changed()
        return info

    def _add_partitions(self, name: str, total: int, assignment: list[list[int]] | None,
                        validate_only: bool) -> TopicInfo:
        with self.store.updating() as state:
            info = state.topics.get(name)
            if info is None or name in state.deleting:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"topic {name!r} does not exist")
            if total <= info.num_partitions:
                raise TopicError(ErrorCode.INVALID_PARTITIONS,
                                 f"topic {name!r} has {info.num_partitions} partitions; "
                                 f"the new count must be larger, got {total}")
            first = info.num_partitions
            added = (_checked({first + i: r for i, r in enumerate(assignment)}, state)
                     if assignment else
                     assign_replicas(total - first, 1, state.processes, first_partition=first))
            if validate_only:
                raise _Discard(info)
            info.assignment.update(added)
            info.num_partitions = total
            state.leader_epochs[name] += [0] * (total - first)
        return info

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        with self.store.updating() as state:
            if name not in state.topics or name in state.deleting:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"topic {name!r} does not exist")
            state.topics[name].configs = dict(configs)
        self._changed()
        self.events.on_topic_config_change(name)  # the others learn it from the controller

    async def elect_leaders(self, election_type: int,
                            partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        """One replica per partition: its leader is its preferred one."""
        if partitions is None:
            partitions = [(n, i) for n in self.topic_names()
                          for i in range(self._state.topics[n].num_partitions)]
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        for topic, index in partitions:
            info = self.topic(topic)
            known = info is not None and 0 <= index < info.num_partitions
            results[(topic, index)] = (ErrorCode.ELECTION_NOT_NEEDED if known
                                       else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return results

    async def alter_partition_reassignments(
            self, items: Sequence[tuple[TopicPartition, list[int] | None]],
            allow_replication_factor_change: bool = True
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        """Each partition stays on its process (one replica, one disk)."""
        processes = [p.broker_id for p in self._state.processes]
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        for (topic, index), target in items:
            info = self.topic(topic)
            if info is None or index not in info.assignment:
                results[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           f"partition {topic}-{index} does not exist")
            else:
                results[(topic, index)] = fixed_replicas_answer(
                    info.assignment[index], target, processes, allow_replication_factor_change)
        return results

    async def list_partition_reassignments(self, partitions: Sequence[TopicPartition] | None
                                           ) -> dict[TopicPartition, ReplicaAssignment]:
        return {}  # nothing ever moves

    async def send_alter_partition(self, items: Sequence[IsrChange]
                                   ) -> tuple[int, dict[TopicPartition, tuple[int, Any]]]:
        return ErrorCode.NOT_CONTROLLER, {}  # one replica: the ISR never changes

    async def alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        return ErrorCode.NOT_CONTROLLER, {}  # the node's controller is its supervisor

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int
                                  ) -> tuple[int, list[TopicPartition]]:
        return ErrorCode.NOT_CONTROLLER, []  # the supervisor stops its processes itself

    def _changed(self) -> None:
        """The file changed: reread it, and wake the node's controller."""
        self._reload()
        try:
            os.kill(self.supervisor_pid, signal.SIGUSR1)
        except ProcessLookupError:
            log.error("the node's supervisor (pid %d) is gone", self.supervisor_pid)


class _Discard(Exception):
    """validate_only: leave the file as it was (raised inside updating())."""

    def __init__(self, info: TopicInfo):
        super().__init__("validate only")
        self.info = info


def _check_one_replica(replication_factor: int) -> None:
    if replication_factor != 1:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"replication factor {replication_factor}: a node keeps one replica of "
                         "each partition (replication needs a cluster: zookeeper.connect)")


def _checked(assignment: dict[int, list[int]], state: NodeState) -> dict[int, list[int]]:
    processes = {p.broker_id for p in state.processes}
    for replicas in assignment.values():
        _check_one_replica(len(replicas))
        if replicas[0] not in processes:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"broker {replicas[0]} is not a process of this node "
                             f"({sorted(processes)})")
    return {p: list(r) for p, r in assignment.items()}

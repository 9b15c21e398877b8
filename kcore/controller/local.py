"""The controller of a single node: no ZooKeeper, metadata in a file.

Kept in `<first log dir>/__cluster_metadata.json` (written to a temp file,
fsynced, renamed, so a crash leaves the old or the new file, never half of
one) next to Kafka's `meta.properties` (cluster.id, broker.id): topics,
their configs and ids, each partition's leader epoch, and the controller
epoch. Every partition has one replica, this broker, which leads it.

Like a cluster controller it tells the broker about every change through
``ControllerEvents`` (LeaderAndIsr, UpdateMetadata, StopReplica payloads),
in process. Each start is a new controller epoch and a new leader epoch
for every partition, as a Kafka cluster's controller failover would make
them: a client holding the old epoch is fenced and refreshes.

Internal topics (``__consumer_offsets``...) get one replica whatever their
configured replication factor: a single node has no other choice.

Not thread-safe: owned by the broker's event loop. Nothing awaits inside.
"""
from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kcore.controller.base import ControllerEvents, IsrChange, StopReplicaPartition
from kcore.controller.placement import validate_counts
from kcore.controller.reassignment import ReplicaAssignment, fixed_replicas_answer
from kcore.metadata import (
    NO_TOPIC_ID,
    BrokerInfo,
    PartitionState,
    TopicError,
    TopicInfo,
    TopicPartition,
    topic_id_to_string,
    validate_topic_name,
)
from kcore.metadata_store.node_file import NodeStore, assign_topic_ids, atomic_write
from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

META_PROPERTIES = "meta.properties"


class LocalController:
    """Cluster metadata of a single broker (see module doc)."""

    def __init__(self, data_dir: Path, broker: BrokerInfo | int,
                 events: ControllerEvents | None = None):
        self._dir = Path(data_dir)
        self.broker = broker if isinstance(broker, BrokerInfo) else BrokerInfo(broker, "127.0.0.1", 9092)
        self.broker_id = self.broker.broker_id
        self.broker_epoch = -1
        self.controller_id = self.broker_id
        self.events = events
        self.topics: dict[str, TopicInfo] = {}
        self._leader_epochs: dict[str, list[int]] = {}
        self.controller_epoch = 0
        self.cluster_id = ""
        self._store = NodeStore(self._dir)
        self._load()

    # -- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        """A new controller epoch; every partition gets a new leader epoch
        and the broker learns them all."""
        self.controller_epoch += 1
        for name, epochs in self._leader_epochs.items():
            self._leader_epochs[name] = [epoch + 1 for epoch in epochs]
        self._save()
        self._publish(list(self.topics), full=True)

    async def register(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def refresh_topics(self, names: Sequence[str]) -> None:
        return None

    async def send_alter_partition(self, items: Sequence[IsrChange]
                                   ) -> tuple[int, dict[TopicPartition, tuple[int, Any]]]:
        """A single node's ISR never changes: nothing to decide."""
        return ErrorCode.NOT_CONTROLLER, {}

    async def alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        return ErrorCode.NOT_CONTROLLER, {}  # no other broker proposes ISR changes here

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int
                                  ) -> tuple[int, list[TopicPartition]]:
        return ErrorCode.NOT_CONTROLLER, []  # no other broker to move leaderships to

    # -- queries -----------------------------------------------------------------------
    async def propagate_log_dir_event(self) -> None:
        """No other replica to lead a failed dir's partitions: nothing to tell."""

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def topic_names(self) -> list[str]:
        return sorted(self.topics)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((info for info in self.topics.values() if info.topic_id == topic_id), None)

    def partition_states(self, name: str) -> list[PartitionState]:
        me = (self.broker_id,)
        topic_id = self.topics[name].topic_id if name in self.topics else NO_TOPIC_ID
        return [PartitionState(name, index, self.broker_id, epoch, me, me, epoch,
                               self.controller_epoch, topic_id)
                for index, epoch in enumerate(self._leader_epochs.get(name, []))]

    # -- changes -----------------------------------------------------------------------
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str],
                           assignment: dict[int, list[int]] | None = None,
                           validate_only: bool = False) -> TopicInfo:
        validate_topic_name(name)
        if name in self.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if assignment:
            self._check_assignment(assignment.values())
            num_partitions, replication_factor = len(assignment), 1
        info = TopicInfo(name, uuid.uuid4(), num_partitions, replication_factor, dict(configs))
        if info.is_internal:
            info.replication_factor = replication_factor = 1
        validate_counts(num_partitions, replication_factor, 1)
        info.assignment = {index: [self.broker_id] for index in range(num_partitions)}
        if not validate_only:
            self.topics[name] = info
            self._leader_epochs[name] = [0] * num_partitions
            self._save()
            self._publish([name])
        return info

    async def delete_topic(self, name: str) -> None:
        info = self.topics.get(name)
        if info is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        epochs = self._leader_epochs.pop(name, [])
        del self.topics[name]
        self._save()
        if self.events is not None:
            self.events.on_stop_replica(self.controller_epoch, [
                StopReplicaPartition(name, index, epoch, True) for index, epoch in enumerate(epochs)])
            self.events.on_update_metadata(self.controller_id, self.controller_epoch,
                                           [self.broker], [], deleted=[name])

    async def create_partitions(self, name: str, total: int,
                                assignment: list[list[int]] | None = None,
                                validate_only: bool = False) -> TopicInfo:
        info = self.topics.get(name)
        if info is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        if total <= info.num_partitions:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {name!r} has {info.num_partitions} partitions; "
                             f"the new count must be larger, got {total}")
        if assignment:
            self._check_assignment(assignment)
        if not validate_only:
            for index in range(info.num_partitions, total):
                info.assignment[index] = [self.broker_id]
            info.num_partitions = total
            self._leader_epochs[name] += [0] * (total - len(self._leader_epochs[name]))
            self._save()
            self._publish([name])
        return info

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        if name not in self.topics:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        self.topics[name].configs = dict(configs)
        self._save()
        if self.events is not None:
            self.events.on_topic_config_change(name)

    async def elect_leaders(self, election_type: int,
                            partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        """The only replica always leads: nothing to elect."""
        if partitions is None:
            partitions = [(name, index) for name, info in self.topics.items()
                          for index in range(info.num_partitions)]
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        for topic, index in partitions:
            info = self.topics.get(topic)
            if info is None or not 0 <= index < info.num_partitions:
                results[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            else:  # preferred or unclean: the leader is the preferred one already
                results[(topic, index)] = (ErrorCode.ELECTION_NOT_NEEDED, None)
        return results

    async def alter_partition_reassignments(
            self, items: Sequence[tuple[TopicPartition, list[int] | None]],
            allow_replication_factor_change: bool = True
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        """The only replica stays where it is: moving it to itself is done."""
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        for (topic, index), target in items:
            info = self.topics.get(topic)
            if info is None or not 0 <= index < info.num_partitions:
                results[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           f"partition {topic}-{index} does not exist")
            else:
                results[(topic, index)] = fixed_replicas_answer(
                    [self.broker_id], target, [self.broker_id], allow_replication_factor_change)
        return results

    async def list_partition_reassignments(self, partitions: Sequence[TopicPartition] | None
                                           ) -> dict[TopicPartition, ReplicaAssignment]:
        return {}  # nothing ever moves

    def _check_assignment(self, replicas_lists) -> None:
        for replicas in replicas_lists:
            if list(replicas) != [self.broker_id]:
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"assignment {list(replicas)} names brokers other than "
                                 f"{self.broker_id}, the only one")

    def _publish(self, names: list[str], full: bool = False) -> None:
        """LeaderAndIsr then UpdateMetadata for these topics, as a cluster
        controller sends them (``full``: they are every topic)."""
        if self.events is None:
            return
        states = [state for name in names for state in self.partition_states(name)]
        self.events.on_leader_and_isr(self.controller_id, self.controller_epoch, states,
                                      [self.broker], full)
        self.events.on_update_metadata(self.controller_id, self.controller_epoch,
                                       [self.broker], states)

    # -- persistence -------------------------------------------------------
    def _load(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        state = self._store.read()
        self.controller_epoch = state.controller_epoch
        self._leader_epochs = state.leader_epochs
        for name in assign_topic_ids(state):
            log.info("topic %s had no id: it is %s now", name,
                     topic_id_to_string(state.topics[name].topic_id))
        for name, info in state.topics.items():
            # Partitions a multi-process run of this node gave to other
            # processes are all this broker's now (their directories were
            # gathered back into this log dir at start).
            info.assignment = {index: [self.broker_id] for index in range(info.num_partitions)}
            info.replication_factor = 1
            self.topics[name] = info

    def _load_meta_properties(self) -> str:
        path = self._dir / META_PROPERTIES
        values = read_meta_properties(path)
        if values:
            stored_id = int(values.get("broker.id", self.broker_id))
            if stored_id != self.broker_id:
                raise ValueError(
                    f"{path} belongs to broker.id={stored_id}, but this broker is "
                    f"broker.id={self.broker_id}")
            return values["cluster.id"]
        cluster_id = new_cluster_id()
        write_meta_properties(path, self.broker_id, cluster_id)
        return cluster_id

    def _save(self) -> None:
        with self._store.updating() as state:
            state.controller_epoch = self.controller_epoch
            state.topics = dict(self.topics)
            state.leader_epochs = dict(self._leader_epochs)
            state.processes, state.deleting = [], set()


def new_cluster_id() -> str:
    """Kafka's cluster ids are 16 random bytes in url-safe base64 (22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def write_meta_properties(path: Path, broker_id: int, cluster_id: str) -> None:
    atomic_write(path, f"#kcore\nversion=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n")


def read_meta_properties(path: Path) -> dict[str, str]:
    """Kafka's meta.properties as a dict; {} when it does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines()
                if "=" in line and not line.startswith("#"))

"""The seam between the broker and whichever controller runs the cluster.

``Controller`` is what handlers and coordinators call: topic changes,
leader elections, the cluster id, and the requests that only the active
controller of a cluster decides (AlterPartition, ControlledShutdown),
answered NOT_CONTROLLER by every other broker and by a node without
ZooKeeper. Three implementations: ``LocalController`` (a single node,
metadata in a file; local.py), ``ManagedController`` (one broker process
of a multi-process node; managed.py) and ``ZkController`` (a cluster
coordinated by ZooKeeper; zk_controller.py). Changes are asynchronous: a cluster
controller's write goes to ZooKeeper and may take effect on another broker.

``ControllerEvents`` is what a controller calls back on a broker, the
payloads of Kafka's controller-to-broker requests: LeaderAndIsr (key 4),
UpdateMetadata (6) and StopReplica (5). A local controller calls it in
process; a cluster controller sends the requests and the broker's handlers
call the same methods, so a broker learns every change the same way,
whether it made it or not. The broker's ReplicaManager implements it.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kcore.controller.reassignment import ReplicaAssignment
from kcore.metadata import BrokerInfo, PartitionState, TopicInfo, TopicPartition

# ElectLeaders election types (KIP-460).
PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


# An ISR change a leader proposes (AlterPartition, KIP-497): the partition,
# the leader epoch and partition epoch it was decided under, the new ISR.
IsrChange = tuple[TopicPartition, int, list[int], int]


@dataclass(frozen=True)
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int
    delete: bool


class ControllerEvents(Protocol):
    """A broker's side of the controller-to-broker requests. Each returns
    Kafka error codes; none awaits."""

    def on_leader_and_isr(self, controller_id: int, controller_epoch: int,
                          states: Sequence[PartitionState],
                          leaders: Sequence[BrokerInfo], full: bool = False
                          ) -> dict[TopicPartition, int]:
        """Become leader or follower of each partition whose leader epoch is
        newer than the one known; per-partition error codes. ``full``:
        ``states`` are every partition this broker hosts, so a log of
        another partition, or of a topic id other than its state's, belongs
        to a deleted topic and is set aside (a stray)."""
        ...

    def on_update_metadata(self, controller_id: int, controller_epoch: int,
                           brokers: Sequence[BrokerInfo], states: Sequence[PartitionState],
                           deleted: Sequence[str] = ()) -> int:
        """Replace the live broker list and merge the partition states into
        the metadata cache; ``deleted`` topics leave it."""
        ...

    def on_stop_replica(self, controller_epoch: int,
                        partitions: Sequence[StopReplicaPartition]) -> dict[TopicPartition, int]:
        """Stop serving (and with ``delete`` remove) these replicas."""
        ...

    def on_topic_config_change(self, topic: str) -> None:
        """The topic's config overrides changed: re-read them (in a cluster
        every broker learns this from ZooKeeper, not from the controller)."""
        ...


class Controller(Protocol):
    """Cluster metadata changes and queries (see module doc)."""

    cluster_id: str
    broker_id: int
    broker_epoch: int  # -1 without ZooKeeper

    async def start(self) -> None:
        """Before the broker listens: load what the broker must know."""
        ...

    async def register(self) -> None:
        """Once the broker listens: join the cluster (a cluster broker
        registers and campaigns for controller)."""
        ...

    async def refresh_topics(self, names: Sequence[str]) -> None:
        """Make sure ``topic()`` knows these topics before partitions of
        them are opened (a controller request may outrun this broker's own
        view of a just-created topic)."""
        ...

    async def shutdown(self) -> None:
        """Leave the cluster (a cluster broker first moves its leaderships
        away: controlled shutdown)."""
        ...

    def topic(self, name: str) -> TopicInfo | None:
        """The topic as last seen by this broker, or None."""
        ...

    def topic_names(self) -> list[str]: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        """The topic with this id as last seen by this broker, or None."""
        ...

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str],
                           assignment: dict[int, list[int]] | None = None,
                           validate_only: bool = False) -> TopicInfo:
        """Raises TopicError with Kafka's error code."""
        ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(self, name: str, total: int,
                                assignment: list[list[int]] | None = None,
                                validate_only: bool = False) -> TopicInfo: ...

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    async def elect_leaders(self, election_type: int,
                            partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        """(error code, message) per partition; None means every partition."""
        ...

    async def alter_partition_reassignments(
            self, items: Sequence[tuple[TopicPartition, list[int] | None]],
            allow_replication_factor_change: bool = True
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        """Move each partition to its target replicas (None: cancel its
        move); (error code, message) per partition (KIP-455). Unless
        ``allow_replication_factor_change``, a target whose length differs
        from the replica count the partition has (or is moving to) gets
        INVALID_REPLICATION_FACTOR (KIP-860)."""
        ...

    async def list_partition_reassignments(self, partitions: Sequence[TopicPartition] | None
                                           ) -> dict[TopicPartition, ReplicaAssignment]:
        """The moves in progress among ``partitions`` (None: all)."""
        ...

    async def send_alter_partition(self, items: Sequence[IsrChange]
                                   ) -> tuple[int, dict[TopicPartition, tuple[int, Any]]]:
        """Propose this broker's leaders' ISR changes to the active
        controller; (top-level error, per partition (error, answer with
        leader_epoch, isr, partition_epoch))."""
        ...

    # -- requests only the active controller decides; NOT_CONTROLLER elsewhere -----------
    async def alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        """Decide the ISR changes ``broker_id`` proposes (AlterPartition):
        (top-level error, per partition (error, its state as now))."""
        ...

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int
                                  ) -> tuple[int, list[TopicPartition]]:
        """Move ``broker_id``'s leaderships away before it stops: (error,
        the partitions it still leads)."""
        ...

    async def propagate_log_dir_event(self) -> None:
        """A log dir of this broker failed: tell the controller, which asks
        this broker about its replicas and moves the leadership of those
        that answer KAFKA_STORAGE_ERROR (Kafka's
        ``/log_dir_event_notification``). Without peers: nothing to do."""
        ...

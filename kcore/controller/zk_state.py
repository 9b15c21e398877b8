"""Reading and writing the cluster state in ZooKeeper for the controller.

Partition states are written with multi-ops that first check the
``/controller_epoch`` znode's version: a controller that lost its office
(another won the election and bumped the epoch) has its writes refused
whole, so two controllers can never both decide (Kafka's
``KafkaZkClient.updateLeaderAndIsr`` with the controller epoch zkVersion
check). Each state write also names the state znode's version it read,
and the new version is the partition epoch.

Not thread-safe; the controller's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kcore.controller import zk_paths as paths
from kcore.metadata import BrokerInfo, PartitionState, TopicInfo, TopicPartition
from kcore.metadata_store.zk_client import (
    BadVersionError,
    CheckOp,
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SetOp,
    ZkClient,
    ZkError,
)

log = logging.getLogger(__name__)

# Ops per multi: ZooKeeper refuses requests over jute.maxbuffer (1 MiB); a
# state write is ~150 bytes, so 500 stay far below it.
MULTI_CHUNK = 500


class ControllerMovedError(Exception):
    """The controller epoch changed under us: another controller took over."""


@dataclass(frozen=True)
class ControllerEpoch:
    epoch: int
    zk_version: int


async def register_controller(zk: ZkClient, data: bytes,
                              read: tuple[int, int] | None = None) -> ControllerEpoch:
    """Create ``/controller`` (ephemeral, ``data`` naming this broker) and
    increment ``/controller_epoch`` in one transaction (Kafka's
    registerControllerAndIncrementControllerEpoch): whoever reads the new
    ``/controller`` reads its epoch too, and a broker that wins the znode
    holds the epoch with it. ``read``: the (epoch, znode version) of
    /controller_epoch as read before, else read now. NodeExistsError:
    another broker is the controller; ControllerMovedError: the epoch moved
    since it was read, and nothing was written."""
    epoch, version = read if read is not None else await _controller_epoch(zk)
    try:
        results = await zk.multi([CreateOp(paths.CONTROLLER, data, ephemeral=True),
                                  SetOp(paths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)])
    except BadVersionError:
        raise ControllerMovedError("the controller epoch moved concurrently") from None
    stat = results[1]
    assert stat is not None and not isinstance(stat, str)
    return ControllerEpoch(epoch + 1, stat.version)


async def _controller_epoch(zk: ZkClient) -> tuple[int, int]:
    """(epoch, znode version) of /controller_epoch, created at 0 (Kafka's
    initial controller epoch) if absent."""
    try:
        data, stat = await zk.get(paths.CONTROLLER_EPOCH)
    except NoNodeError:
        try:
            await zk.create(paths.CONTROLLER_EPOCH, b"0")
            return 0, 0
        except NodeExistsError:
            data, stat = await zk.get(paths.CONTROLLER_EPOCH)
    return int(data.decode() or "0"), stat.version


async def read_brokers(zk: ZkClient) -> dict[int, BrokerInfo]:
    brokers = {}
    for child in await zk.get_children(paths.BROKER_IDS):
        try:
            data, stat = await zk.get(paths.broker_path(int(child)))
        except (NoNodeError, ValueError):
            continue  # gone since the listing, or not a broker id
        brokers[int(child)] = paths.decode_broker(int(child), data, stat.czxid)
    return brokers


async def read_topic(zk: ZkClient, name: str) -> TopicInfo | None:
    try:
        data, _ = await zk.get(paths.topic_path(name))
    except NoNodeError:
        return None
    assignment, topic_id = paths.decode_assignment(data)
    adding, removing = paths.decode_reassignments(data)
    try:
        config_data, _ = await zk.get(paths.topic_config_path(name))
        configs = paths.decode_topic_config(config_data)
    except NoNodeError:
        configs = {}
    replication_factor = len(next(iter(assignment.values()))) if assignment else 0
    return TopicInfo(name, topic_id, len(assignment), replication_factor, configs, assignment, adding, removing)


async def read_partition_states(zk: ZkClient, topic: TopicInfo) -> dict[TopicPartition, PartitionState]:
    """The state of each partition of ``topic`` that has one."""
    async def one(index: int) -> PartitionState | None:
        try:
            data, stat = await zk.get(paths.partition_state_path(topic.name, index))
        except NoNodeError:
            return None
        controller_epoch, leader, leader_epoch, isr = paths.decode_partition_state(data)
        return PartitionState(topic.name, index, leader, leader_epoch, tuple(isr),
                              tuple(topic.assignment[index]), stat.version, controller_epoch,
                              topic.topic_id)
    found = await asyncio.gather(*(one(index) for index in topic.assignment))
    return {state.topic_partition: state for state in found if state is not None}


class StateWriter:
    """Conditional writes of partition states under one controller epoch."""

    def __init__(self, zk: ZkClient, epoch: ControllerEpoch):
        self.zk = zk
        self.epoch = epoch

    async def create(self, states: Sequence[PartitionState]) -> list[PartitionState]:
        """New partitions' first states (partition epoch 0)."""
        for topic in {s.topic for s in states}:
            await _ensure(self.zk, paths.partitions_path(topic))
        for state in states:
            await _ensure(self.zk, f"{paths.partitions_path(state.topic)}/{state.partition}")
        written: list[PartitionState] = []
        for chunk in _chunks(states):
            ops = [CreateOp(paths.partition_state_path(s.topic, s.partition), self._data(s))
                   for s in chunk]
            try:
                await self._multi(ops)
                written.extend(replace(s, partition_epoch=0) for s in chunk)
            except NodeExistsError:
                log.warning("partition states of %s existed already; re-reading",
                            sorted({s.topic for s in chunk}))
        return written

    async def update(self, changes: Sequence[tuple[PartitionState, PartitionState]]
                     ) -> list[PartitionState]:
        """(current, new) pairs; each written only if its znode is still at
        the current state's version. Returns the new states as written
        (with their partition epochs); a partition whose write was refused
        is left out (its znode changed behind our back)."""
        written: list[PartitionState] = []
        for chunk in _chunks(changes):
            ops = [SetOp(paths.partition_state_path(new.topic, new.partition), self._data(new),
                         version=old.partition_epoch) for old, new in chunk]
            try:
                results = await self._multi(ops)
            except BadVersionError as exc:
                log.warning("a partition state changed behind the controller (%s); "
                            "writing one by one", exc)
                written.extend(await self._update_one_by_one(chunk))
                continue
            written.extend(replace(new, partition_epoch=stat.version)
                           for (_, new), stat in zip(chunk, results[1:]))
        return written

    async def write_assignment(self, topic: TopicInfo) -> None:
        """The topic's assignment znode with its reassignments in progress
        (RS, AR, RR; reassignment.py), under this controller's epoch."""
        await self._multi([SetOp(paths.topic_path(topic.name), paths.encode_assignment(
            topic.assignment, topic.topic_id, topic.adding_replicas, topic.removing_replicas))])

    async def _update_one_by_one(self, changes) -> list[PartitionState]:
        written = []
        for old, new in changes:
            path = paths.partition_state_path(new.topic, new.partition)
            try:
                results = await self._multi([SetOp(path, self._data(new),
                                                   version=old.partition_epoch)])
                written.append(replace(new, partition_epoch=results[1].version))
            except BadVersionError:
                log.error("%s-%d: state znode changed behind the controller; skipped",
                          new.topic, new.partition)
        return written

    async def _multi(self, ops: list) -> list:
        try:
            return await self.zk.multi([CheckOp(paths.CONTROLLER_EPOCH, self.epoch.zk_version),
                                        *ops])
        except ZkError as exc:
            if exc.op_index == 0:
                raise ControllerMovedError(f"controller epoch {self.epoch.epoch} is over") from None
            if exc.op_index is not None:
                exc.op_index -= 1
            raise

    def _data(self, state: PartitionState) -> bytes:
        return paths.encode_partition_state(self.epoch.epoch, state.leader, state.leader_epoch,
                                            state.isr)


async def _ensure(zk: ZkClient, path: str) -> None:
    try:
        await zk.create(path, makepath=True)
    except NodeExistsError:
        pass


def _chunks(items: Sequence) -> Iterable[Sequence]:
    for start in range(0, len(items), MULTI_CHUNK):
        yield items[start:start + MULTI_CHUNK]

"""The share coordinator: share-partition state in ``__share_group_state``
(KIP-932; Kafka's ``ShareCoordinatorShard``).

The broker leading partition state_partition_for(key) of the topic keeps
the state of the share-partitions hashed there: it serves
Initialize/Read/Write/Delete ShareGroupState and ReadShareGroupStateSummary
(handlers, and ``SharePersister`` when the share-partition's leader is this
broker), appends each change as a record (records.py: a snapshot per
write, the whole state) with acks=all and answers once the in-sync
replicas have it, and rebuilds its map by replaying the partition when it
becomes the leader (snapshots, updates applied over them, tombstones).

The topic is created through the controller on first use with
``share.coordinator.state.topic.num.partitions`` partitions,
``share.coordinator.state.topic.replication.factor`` replicas (one on a
node without ZooKeeper) and cleanup.policy=compact.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kcore.controller.base import Controller
from kcore.coordinator.internal_log import StoreError, append_replicated, iter_log_batches
from kcore.coordinator.share import records
from kcore.coordinator.share.records import ShareKey, ShareState
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata import TopicError
from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"
# Kafka's share.coordinator.state.topic.segment.bytes default (100 MiB).
SHARE_STATE_SEGMENT_BYTES = 104_857_600
# Kafka's share.coordinator.write.timeout.ms default: how long a write
# waits for the in-sync replicas.
WRITE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ShareStateConfig:
    num_partitions: int
    replication_factor: int
    min_isr: int


class ShareStateStore:
    def __init__(self, controller: Controller, replica_manager: ReplicaManager,
                 config: ShareStateConfig) -> None:
        self.controller = controller
        self.replica_manager = replica_manager
        self.config = config
        self.states: dict[ShareKey, ShareState] = {}
        self.owned_partitions: set[int] = set()
        self.syncer: GroupCommitSyncer | None = None

    # -- topic ---------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        info = self.controller.topic(SHARE_STATE_TOPIC)
        return info.num_partitions if info is not None else self.config.num_partitions

    def partition_for(self, key: ShareKey) -> int:
        return records.state_partition_for(key, self.num_partitions)

    async def ensure_topic(self) -> None:
        if self.controller.topic(SHARE_STATE_TOPIC) is not None:
            return
        try:
            await self.controller.create_topic(
                SHARE_STATE_TOPIC, self.config.num_partitions, self.config.replication_factor,
                {"cleanup.policy": "compact", "segment.bytes": str(SHARE_STATE_SEGMENT_BYTES),
                 "min.insync.replicas": str(self.config.min_isr)})
            log.info("created %s with %d partitions", SHARE_STATE_TOPIC, self.config.num_partitions)
        except TopicError as exc:
            if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise

    # -- leadership ----------------------------------------------------------------------
    def on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        if partition.topic != SHARE_STATE_TOPIC:
            return
        if not is_leader:
            self.owned_partitions.discard(partition.index)
            for key in [key for key in self.states if self.partition_for(key) == partition.index]:
                del self.states[key]
            return
        if partition.index in self.owned_partitions:
            return
        count = 0
        for batch in iter_log_batches(partition):
            if batch.is_control:
                continue
            for record in batch.records():
                count += self._replay(record)
        self.owned_partitions.add(partition.index)
        log.log(logging.INFO if count else logging.DEBUG, "replayed %d records of %s-%d", count,
                SHARE_STATE_TOPIC, partition.index)

    def _replay(self, record: record_codec.Record) -> int:
        if record.key is None:
            return 0
        try:
            record_type, key = records.decode_key(record.key)
            if record.value is None:
                self.states.pop(key, None)
                return 1
            state = records.decode_value(record_type, record.value)
        except (ValueError, IndexError) as exc:
            log.warning("skipping an unreadable %s record: %s", SHARE_STATE_TOPIC, exc)
            return 0
        if record_type == records.SNAPSHOT:
            self.states[key] = state
        else:
            previous = self.states.get(key)
            self.states[key] = state if previous is None else records.apply_update(previous, state)
        return 1

    def check(self, key: ShareKey) -> int:
        """NOT_COORDINATOR unless this broker leads the key's partition and
        has loaded it."""
        index = self.partition_for(key)
        partition = self.replica_manager.get(SHARE_STATE_TOPIC, index)
        if partition is None or not partition.is_leader:
            return ErrorCode.NOT_COORDINATOR
        if index not in self.owned_partitions:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    # -- the operations ------------------------------------------------------------------
    def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        """(error, state); state None when never initialized. A read with
        an older leader epoch than the one recorded is fenced."""
        code = self.check(key)
        if code != ErrorCode.NONE:
            return code, None
        state = self.states.get(key)
        if state is not None and leader_epoch >= 0 and leader_epoch < state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None
        return ErrorCode.NONE, state

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        code = self.check(key)
        if code != ErrorCode.NONE:
            return code
        state = self.states.get(key)
        if state is not None and state_epoch < state.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        now = int(time.time() * 1000)
        return await self._store(key, ShareState(0, state_epoch, -1, start_offset, 0, [], now, now))

    async def write(self, key: ShareKey, state: ShareState) -> int:
        """A whole new state from the share-partition's leader; fenced when
        its leader epoch or state epoch is older than the stored one."""
        code = self.check(key)
        if code != ErrorCode.NONE:
            return code
        stored = self.states.get(key)
        if stored is not None:
            if state.leader_epoch < stored.leader_epoch:
                return ErrorCode.FENCED_LEADER_EPOCH
            if state.state_epoch < stored.state_epoch:
                return ErrorCode.FENCED_STATE_EPOCH
            state.snapshot_epoch = stored.snapshot_epoch + 1
            state.create_timestamp = stored.create_timestamp
        state.write_timestamp = int(time.time() * 1000)
        if not state.create_timestamp:
            state.create_timestamp = state.write_timestamp
        return await self._store(key, state)

    async def delete(self, key: ShareKey) -> int:
        code = self.check(key)
        if code != ErrorCode.NONE:
            return code
        if key not in self.states:
            return ErrorCode.NONE
        return await self._store(key, None)

    def keys_of_group(self, group_id: str) -> list[ShareKey]:
        return sorted((key for key in self.states if key.group_id == group_id),
                      key=lambda key: (str(key.topic_id), key.partition))

    async def _store(self, key: ShareKey, state: ShareState | None) -> int:
        partition = self.replica_manager.get(SHARE_STATE_TOPIC, self.partition_for(key))
        if partition is None or not partition.is_leader:
            return ErrorCode.NOT_COORDINATOR
        value = None if state is None else records.encode_snapshot(state)
        batch = record_codec.build_batch([record_codec.Record(
            key=records.encode_key(records.SNAPSHOT, key), value=value)])
        try:
            pending = append_replicated(partition, batch, self.syncer, WRITE_TIMEOUT_S)
            if pending is not None:
                await pending
        except StoreError as exc:
            log.warning("cannot write the share state of %s: error %d", key, exc.error_code)
            return exc.error_code
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state
        return ErrorCode.NONE

"""The `__consumer_offsets` topic: creation, appends and replay.

The topic is created through the controller on first use (FindCoordinator,
or a JoinGroup / OffsetCommit that comes without it) with
`offsets.topic.num.partitions` partitions, `offsets.topic.replication.factor`
replicas and cleanup.policy=compact, so the log cleaner keeps the latest
record per key (records.py has the key and value layouts). A group lives in
partition partition_for(group_id), and its coordinator is that partition's
leader.

Writes build one whole v2 batch per call (kcore.protocol.records.build_batch)
and append it through that partition's leader with acks=all. Offset commits
(``store_offsets(wait=True)``) return a future that completes once the batch
is on every in-sync replica (and, with flush.messages=1, fsynced by group
commit), so an acknowledged commit survives the loss of the coordinator.
Other writes (group metadata, tombstones) are few: they return after the
leader's append.

Replay reads one partition from its log start offset to its log end
offset when this broker becomes its leader: the last record per key wins,
a null value (tombstone) deletes. Transactional offset commits count once
their COMMIT marker is read and are dropped on ABORT.

Concurrency contract: not thread-safe, not safe across await; the broker's
event loop owns it. Appends are synchronous (page cache writes).
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kcore.clock import SYSTEM_CLOCK, Clock, wall_ms
from kcore.controller.base import Controller
from kcore.coordinator.group import consumer_records
from kcore.coordinator.group import records as offsets_records
from kcore.coordinator.group.records import GroupKey, GroupValue, OffsetKey, OffsetValue
from kcore.coordinator.internal_log import StoreError, append_replicated, iter_log_batches
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata import TopicError
from kcore.protocol import records as record_codec
from kcore.protocol.constants import ACKS_ALL
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.topic_ids import CachedTopicIds

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's offsets.topic.segment.bytes default: 100 MiB segments roll often
# enough for the cleaner to compact an offsets log it never touches while active.
OFFSETS_TOPIC_SEGMENT_BYTES = 104_857_600
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact",
                         "segment.bytes": str(OFFSETS_TOPIC_SEGMENT_BYTES),
                         "compression.type": "producer"}
# Distinct group ids remembered by partition_for before the cache restarts.
PARTITION_CACHE_SIZE = 100_000
# How long an offset commit waits for the ISR to copy it (Kafka's
# offsets.commit.timeout.ms default).
OFFSETS_COMMIT_TIMEOUT_S = 5.0


@dataclass
class LoadedGroup:
    """What the log says of one group after replay."""
    value: GroupValue | None = None
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    # Offsets committed by transactions whose marker is not in the log yet,
    # per producer id: they count once a COMMIT marker arrives.
    pending_txn: dict[int, dict[tuple[str, int], OffsetValue]] = field(default_factory=dict)
    # Consumer-protocol group records (key, value or None), in log order,
    # for ConsumerGroup.replay.
    consumer: list[tuple[consumer_records.ConsumerGroupKey, object]] = field(default_factory=list)


class GroupMetadataManager:
    """Reads and writes the __consumer_offsets topic (see module doc)."""

    def __init__(self, controller: Controller, replica_manager: ReplicaManager, num_partitions: int,
                 replication_factor: int = 1, clock: Clock = SYSTEM_CLOCK):
        self.controller = controller
        # The group coordinator's one clock (kcore/clock.py): its wall clock
        # stamps what is written; deadlines are event-loop timers.
        self.clock = clock
        self.replica_manager = replica_manager
        self.configured_partitions = num_partitions
        self.replication_factor = replication_factor
        # group id -> partition; the hash runs per character and commits are
        # the hot path. Cleared when it grows past PARTITION_CACHE_SIZE.
        self._partitions: dict[str, int] = {}
        # The broker's group-commit syncer (kcore.log.durability), once started.
        self.syncer: GroupCommitSyncer | None = None
        self.topic_ids = CachedTopicIds(replica_manager.metadata_cache)

    # -- topic ---------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """The topic's real partition count once it exists (it wins over the
        config, as in Kafka), else the configured one."""
        info = self.controller.topic(OFFSETS_TOPIC)
        return info.num_partitions if info is not None else self.configured_partitions

    def partition_for(self, group_id: str) -> int:
        partition = self._partitions.get(group_id)
        if partition is None:
            if len(self._partitions) >= PARTITION_CACHE_SIZE:
                self._partitions.clear()
            partition = offsets_records.partition_for(group_id, self.num_partitions)
            self._partitions[group_id] = partition
        return partition

    async def maybe_create_topic(self) -> None:
        """ensure_topic for group requests that come without FindCoordinator
        first: creation failures are left to the coordinator's answer
        (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE)."""
        if self.controller.topic(OFFSETS_TOPIC) is None:
            try:
                await self.ensure_topic()
            except TopicError as exc:
                log.warning("cannot create %s: %s", OFFSETS_TOPIC, exc.message)

    async def ensure_topic(self) -> None:
        """Create the topic through the controller when it does not exist
        (the broker learns its partitions like any other topic's). Raises
        TopicError, e.g. INVALID_REPLICATION_FACTOR while fewer brokers than
        offsets.topic.replication.factor are live."""
        if self.controller.topic(OFFSETS_TOPIC) is not None:
            return
        try:
            await self.controller.create_topic(OFFSETS_TOPIC, self.configured_partitions,
                                               self.replication_factor,
                                               dict(OFFSETS_TOPIC_CONFIGS))
            log.info("created %s with %d partitions", OFFSETS_TOPIC, self.configured_partitions)
        except TopicError as exc:
            if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise
        self._partitions.clear()

    # -- topics of consumer-protocol groups ------------------------------------------------
    @property
    def metadata_version(self) -> int:
        return self.replica_manager.metadata_cache.version

    def topic_metadata(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of a topic this broker knows, or None."""
        info = self.controller.topic(name)
        if info is None:
            return None
        count = len(self.replica_manager.metadata_cache.partitions(name)) or info.num_partitions
        return info.topic_id, count

    def topic_names(self) -> list[str]:
        return self.controller.topic_names()

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id in this broker's metadata
        (the ids Metadata answers), None when unknown."""
        return self.topic_ids.name_of(topic_id)

    # -- writes --------------------------------------------------------------------------
    def append(self, group_id: str, entries: list[tuple[bytes, bytes | None]],
               syncer: GroupCommitSyncer | None = None, wait: bool = False,
               producer: tuple[int, int] | None = None) -> asyncio.Future | None:
        """Append (key, value) records of one group as one batch with
        acks=all; raises StoreError with the partition's error code. With
        ``wait``, returns a future that completes once the batch is durable
        (flush.messages=1 with the broker's ``syncer``) and replicated to
        the ISR, failing with StoreError otherwise; None when both hold
        already. ``producer`` (id, epoch) makes the batch part of that
        producer's transaction."""
        if not entries:
            return None
        partition = self.replica_manager.get(OFFSETS_TOPIC, self.partition_for(group_id))
        if partition is None or not partition.is_leader:
            raise StoreError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"this broker does not lead the {OFFSETS_TOPIC} partition of "
                             f"group {group_id!r}")
        timestamp = wall_ms(self.clock)
        producer_id, producer_epoch = producer if producer is not None else (-1, -1)
        batch = record_codec.build_batch(
            [record_codec.Record(key=key, value=value, timestamp=timestamp) for key, value in entries],
            producer_id=producer_id, producer_epoch=producer_epoch,
            is_transactional=producer is not None)
        if not wait:
            try:
                return partition.append_records_to_leader(memoryview(batch), ACKS_ALL, syncer).durable
            except PartitionError as exc:
                raise StoreError(exc.error_code, exc.message) from None
        return append_replicated(partition, batch, syncer, OFFSETS_COMMIT_TIMEOUT_S)

    def store_group(self, group_id: str, value: GroupValue) -> None:
        self.append(group_id, [(offsets_records.encode_group_key(group_id),
                                offsets_records.encode_group_value(value))])

    def store_offsets(self, group_id: str, offsets: dict[tuple[str, int], OffsetValue],
                      wait: bool = False) -> asyncio.Future | None:
        """``wait``: the caller awaits the returned fsync future (if any)
        instead of this call fsyncing inline."""
        return self.append(group_id, [(offsets_records.encode_offset_key(group_id, topic, partition),
                                       offsets_records.encode_offset_value(value))
                                      for (topic, partition), value in offsets.items()],
                           self.syncer if wait else None, wait)

    def store_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                          offsets: dict[tuple[str, int], OffsetValue]) -> asyncio.Future | None:
        """TxnOffsetCommit: the offsets as part of the producer's
        transaction; the returned future completes once the ISR has them."""
        return self.append(group_id, [(offsets_records.encode_offset_key(group_id, topic, partition),
                                       offsets_records.encode_offset_value(value))
                                      for (topic, partition), value in offsets.items()],
                           self.syncer, True, (producer_id, producer_epoch))

    def store_consumer_records(self, group_id: str, records: Sequence[tuple[object, Any]]
                               ) -> asyncio.Future | None:
        """Consumer-group records (value None: a tombstone) as one batch,
        with classic group records (GroupKey: GroupValue) where a group
        changes protocol; returns the future of the ISR's copy (append's
        ``wait``), or None when it holds already."""
        entries: list[tuple[bytes, bytes | None]] = []
        for key, value in records:
            if isinstance(key, GroupKey):
                entries.append((offsets_records.encode_group_key(key.group),
                                None if value is None else offsets_records.encode_group_value(value)))
            else:
                assert isinstance(key, consumer_records.ConsumerGroupKey)
                entries.append((consumer_records.encode_key(key),
                                None if value is None else consumer_records.encode_value(key.type, value)))
        future = self.append(group_id, entries, wait=True)
        if future is not None:
            future.add_done_callback(_retrieve)
        return future

    def tombstones(self, group_id: str, offsets: list[tuple[str, int]],
                   include_group: bool) -> None:
        entries: list[tuple[bytes, bytes | None]] = [
            (offsets_records.encode_offset_key(group_id, topic, partition), None)
            for topic, partition in offsets]
        if include_group:
            entries.append((offsets_records.encode_group_key(group_id), None))
        self.append(group_id, entries)

    # -- replay --------------------------------------------------------------------------
    def load_partition(self, index: int) -> dict[str, LoadedGroup]:
        """Every group and offset recorded in one partition of the topic,
        latest record per key (the coordinator calls it when this broker
        becomes the partition's leader)."""
        loaded: dict[str, LoadedGroup] = {}
        partition = self.replica_manager.get(OFFSETS_TOPIC, index)
        if partition is None:
            return loaded
        count = self._replay_partition(partition, loaded)
        groups = {group_id: item for group_id, item in loaded.items()
                  if item.value is not None or item.offsets or item.pending_txn or item.consumer}
        log.log(logging.INFO if count else logging.DEBUG, "replayed %d records of %s-%d: %d groups",
                count, OFFSETS_TOPIC, index, len(groups))
        return groups

    def _replay_partition(self, partition: Partition, loaded: dict[str, LoadedGroup]) -> int:
        pending_txn: dict[int, list[record_codec.Record]] = {}
        count = 0
        for batch in iter_log_batches(partition):
            if batch.is_control:
                records = pending_txn.pop(batch.producer_id, [])
                if batch.control_type is record_codec.ControlType.COMMIT:
                    count += _apply_all(records, loaded)
                continue
            if batch.is_transactional:
                pending_txn.setdefault(batch.producer_id, []).extend(batch.records())
                continue
            count += _apply_all(batch.records(), loaded)
        for producer_id, records in pending_txn.items():
            _apply_pending(producer_id, records, loaded)
        return count


def _retrieve(future: asyncio.Future) -> None:
    """Mark a failure as seen: callers that do not await it (timers,
    admin cleanups) log nothing twice; those that do still get it."""
    if not future.cancelled():
        future.exception()


_RECORD_ERRORS = (offsets_records.RecordFormatError, consumer_records.ConsumerRecordError)


def _apply_all(items: list[record_codec.Record], loaded: dict[str, LoadedGroup]) -> int:
    for record in items:
        try:
            _apply(record, loaded)
        except _RECORD_ERRORS as exc:
            log.warning("%s: skipping record at offset %s: %s", OFFSETS_TOPIC, record.offset, exc)
    return len(items)


def _apply_pending(producer_id: int, items: list[record_codec.Record],
                   loaded: dict[str, LoadedGroup]) -> None:
    """Offsets of a transaction still open at the log end (no marker yet)."""
    for record in items:
        try:
            key = offsets_records.decode_key(record.key) if record.key is not None else None
            if isinstance(key, OffsetKey) and record.value is not None:
                value = offsets_records.decode_offset_value(record.value)
                entry = loaded.setdefault(key.group, LoadedGroup())
                entry.pending_txn.setdefault(producer_id, {})[(key.topic, key.partition)] = value
        except offsets_records.RecordFormatError as exc:
            log.warning("%s: skipping record at offset %s: %s", OFFSETS_TOPIC, record.offset, exc)


def _apply(record: record_codec.Record, loaded: dict[str, LoadedGroup]) -> None:
    if record.key is None or len(record.key) < 2:
        raise offsets_records.RecordFormatError("record without a key")
    record_type = int.from_bytes(record.key[:2], "big", signed=True)
    if record_type in consumer_records.KEY_TYPES:
        consumer_key = consumer_records.decode_key(record_type, record.key)
        value = None if record.value is None else consumer_records.decode_value(record_type, record.value)
        loaded.setdefault(consumer_key.group, LoadedGroup()).consumer.append((consumer_key, value))
        return
    key = offsets_records.decode_key(record.key)
    entry = loaded.setdefault(key.group, LoadedGroup())
    if isinstance(key, OffsetKey):
        if record.value is None:
            entry.offsets.pop((key.topic, key.partition), None)
        else:
            entry.offsets[(key.topic, key.partition)] = offsets_records.decode_offset_value(record.value)
    elif isinstance(key, GroupKey):
        entry.value = None if record.value is None else offsets_records.decode_group_value(record.value)

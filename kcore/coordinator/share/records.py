"""The records of ``__share_group_state``, in Kafka's layout (KIP-932).

Each record's key starts with an int16 record type, then the key fields
(not flexible):

    0 ShareSnapshotKey  GroupId string, TopicId uuid, Partition int32
    1 ShareUpdateKey    the same fields

and its value with an int16 version (0), then the flexible value:

    ShareSnapshotValue  SnapshotEpoch int32, StateEpoch int32, LeaderEpoch
                        int32, StartOffset int64, DeliveryCompleteCount
                        int32 (tag 0, Kafka 4.2, KIP-1226), CreateTimestamp
                        int64, WriteTimestamp int64, StateBatches
                        [FirstOffset int64, LastOffset int64, DeliveryState
                        int8, DeliveryCount int16]
    ShareUpdateValue    SnapshotEpoch int32, LeaderEpoch int32, StartOffset
                        int64, DeliveryCompleteCount (tag 0), StateBatches

A snapshot holds a share-partition's whole state; an update holds the
batches that changed since, applied over the snapshot on replay. A null
value (tombstone) deletes the share-partition's state. The topic is
compacted: the latest record per key survives.

A share-partition's state lives in partition
abs(Java String.hashCode("group:topic_id:partition")) % partitions (Kafka's
SharePartitionKey as the share coordinator key, the topic id in Kafka's
URL-safe base64 form without padding).

Sources: apache/kafka share-coordinator/src/main/resources/common/message/
ShareSnapshotKey.json, ShareSnapshotValue.json, ShareUpdateKey.json,
ShareUpdateValue.json.
"""
from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass

from kcore.coordinator.group.records import partition_for
from kcore.coordinator.share.share_partition import StateBatch
from kcore.protocol.codec import decode_struct, encode_struct
from kcore.protocol.schema import Field, Struct

SNAPSHOT = 0
UPDATE = 1
VALUE_VERSION = 0
UNINITIALIZED_START_OFFSET = -1

_KEY = Struct("ShareSnapshotKey", [
    Field("group_id", "string", "0+"),
    Field("topic_id", "uuid", "0+"),
    Field("partition", "int32", "0+"),
])

_BATCH = [
    Field("first_offset", "int64", "0+"),
    Field("last_offset", "int64", "0+"),
    Field("delivery_state", "int8", "0+"),
    Field("delivery_count", "int16", "0+"),
]

_SNAPSHOT_VALUE = Struct("ShareSnapshotValue", [
    Field("snapshot_epoch", "int32", "0+"),
    Field("state_epoch", "int32", "0+"),
    Field("leader_epoch", "int32", "0+"),
    Field("start_offset", "int64", "0+"),
    Field("delivery_complete_count", "int32", "0+", default=-1, tag=0, tagged="0+"),
    Field("create_timestamp", "int64", "0+"),
    Field("write_timestamp", "int64", "0+"),
    Field("state_batches", "[]StateBatch", "0+", fields=_BATCH),
], flexible="0+")

_UPDATE_VALUE = Struct("ShareUpdateValue", [
    Field("snapshot_epoch", "int32", "0+"),
    Field("leader_epoch", "int32", "0+"),
    Field("start_offset", "int64", "0+"),
    Field("delivery_complete_count", "int32", "0+", default=-1, tag=0, tagged="0+"),
    Field("state_batches", "[]StateBatch", "0+", fields=_BATCH),
], flexible="0+")


@dataclass(frozen=True, slots=True)
class ShareKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True)
class ShareState:
    """A share-partition's persisted state (a snapshot, updates applied)."""
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: list[StateBatch]
    create_timestamp: int = 0
    write_timestamp: int = 0


def coordinator_key(key: ShareKey) -> str:
    """Kafka's SharePartitionKey string: "group:topic_id:partition"."""
    encoded = base64.urlsafe_b64encode(key.topic_id.bytes).decode().rstrip("=")
    return f"{key.group_id}:{encoded}:{key.partition}"


def parse_coordinator_key(text: str) -> ShareKey:
    """"group:topic_id:partition" back to its parts (ValueError if malformed);
    the group id may itself hold colons."""
    group_id, _, rest = text.rpartition(":")
    group_id, _, encoded = group_id.rpartition(":")
    if not group_id or not encoded:
        raise ValueError(f"{text!r} is not group:topic_id:partition")
    topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    return ShareKey(group_id, topic_id, int(rest))


def state_partition_for(key: ShareKey, num_partitions: int) -> int:
    return partition_for(coordinator_key(key), num_partitions)


def encode_key(record_type: int, key: ShareKey) -> bytes:
    return struct.pack(">h", record_type) + encode_struct(_KEY, 0, _KEY.data_class(
        group_id=key.group_id, topic_id=key.topic_id, partition=key.partition), flexible=False)


def decode_key(data: bytes) -> tuple[int, ShareKey]:
    (record_type,) = struct.unpack_from(">h", data)
    if record_type not in (SNAPSHOT, UPDATE):
        raise ValueError(f"unknown __share_group_state record type {record_type}")
    body = decode_struct(_KEY, 0, memoryview(data)[2:], flexible=False)
    return record_type, ShareKey(body.group_id, body.topic_id, body.partition)


def encode_snapshot(state: ShareState) -> bytes:
    value = _SNAPSHOT_VALUE.data_class(
        snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch, start_offset=state.start_offset,
        delivery_complete_count=state.delivery_complete_count,
        create_timestamp=state.create_timestamp, write_timestamp=state.write_timestamp,
        state_batches=[_BATCH_CLASS(first_offset=b.first_offset, last_offset=b.last_offset,
                                    delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                       for b in state.state_batches])
    return struct.pack(">h", VALUE_VERSION) + encode_struct(_SNAPSHOT_VALUE, VALUE_VERSION, value)


def decode_value(record_type: int, data: bytes) -> ShareState:
    """A snapshot's state, or an update's (state epoch -1: updates carry none)."""
    (version,) = struct.unpack_from(">h", data)
    if version != VALUE_VERSION:
        raise ValueError(f"unknown __share_group_state value version {version}")
    schema = _SNAPSHOT_VALUE if record_type == SNAPSHOT else _UPDATE_VALUE
    body = decode_struct(schema, VALUE_VERSION, memoryview(data)[2:])
    batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
               for b in body.state_batches]
    if record_type == SNAPSHOT:
        return ShareState(body.snapshot_epoch, body.state_epoch, body.leader_epoch, body.start_offset,
                          body.delivery_complete_count, batches, body.create_timestamp,
                          body.write_timestamp)
    return ShareState(body.snapshot_epoch, -1, body.leader_epoch, body.start_offset,
                      body.delivery_complete_count, batches)


def apply_update(state: ShareState, update: ShareState) -> ShareState:
    """An update over the state it follows: its start offset (unless -1)
    and its batches win over what they overlap."""
    start = update.start_offset if update.start_offset >= 0 else state.start_offset
    merged: dict[int, tuple[int, int]] = {}
    for batch in state.state_batches + update.state_batches:
        for offset in range(max(batch.first_offset, start), batch.last_offset + 1):
            merged[offset] = (batch.delivery_state, batch.delivery_count)
    return ShareState(update.snapshot_epoch, state.state_epoch,
                      max(state.leader_epoch, update.leader_epoch), start,
                      update.delivery_complete_count, _runs(merged), state.create_timestamp,
                      state.write_timestamp)


def _runs(states: dict[int, tuple[int, int]]) -> list[StateBatch]:
    batches: list[StateBatch] = []
    for offset in sorted(states):
        state, count = states[offset]
        last = batches[-1] if batches else None
        if last is not None and last.last_offset == offset - 1 and (
                last.delivery_state, last.delivery_count) == (state, count):
            batches[-1] = StateBatch(last.first_offset, offset, state, count)
        else:
            batches.append(StateBatch(offset, offset, state, count))
    return batches


_BATCH_CLASS = _SNAPSHOT_VALUE.fields[-1].struct.data_class  # type: ignore[union-attr]

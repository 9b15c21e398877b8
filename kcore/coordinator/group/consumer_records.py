"""Records of consumer-protocol groups (KIP-848) in `__consumer_offsets`.

Same framing as the classic records (records.py): key and value each start
with an int16; for keys it is the record type, for values the value
version. Keys use the classic encoding (int16 string lengths), values
version 0 the flexible one (compact lengths, tagged fields). Sources:
apache/kafka group-coordinator `src/main/resources/common/message/
ConsumerGroup*Key.json` and `ConsumerGroup*Value.json`.

    type  key fields                    value (version 0)
    3     group_id                      ConsumerGroupMetadata: epoch, [tag 0] metadata_hash
    4     group_id                      ConsumerGroupPartitionMetadata: topics (read, never written)
    5     group_id, member_id           ConsumerGroupMemberMetadata: instance_id, rack_id,
                                        client_id, client_host, subscribed_topic_names,
                                        subscribed_topic_regex, rebalance_timeout_ms,
                                        server_assignor, [tag 0] classic_member_metadata
    6     group_id                      ConsumerGroupTargetAssignmentMetadata: assignment_epoch
    7     group_id, member_id           ConsumerGroupTargetAssignmentMember: topic_partitions
    8     group_id, member_id           ConsumerGroupCurrentMemberAssignment: member_epoch,
                                        previous_member_epoch, state, assigned_partitions,
                                        partitions_pending_revocation
    16    group_id, regular_expression  ConsumerGroupRegularExpression: topics, version, timestamp

A null value is a tombstone. Since Kafka 4.1 (KIP-1101) the coordinator
keeps a hash of the subscribed topics' metadata in the group record
instead of writing type 4; a type 4 record still in the log is read and
ignored. The hash here is kcore's own (only ever compared with itself: a
coordinator that reads a different one recomputes the assignment once).
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kcore.protocol import decode_struct, encode_struct
from kcore.protocol.exceptions import ProtocolDecodeError
from kcore.protocol.schema import Field, Struct

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
KEY_TYPES = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA,
                       TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
                       CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION})
# Key types whose key names a member, and the one that names a regex.
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})
VALUE_VERSION = 0

_VERSION = struct.Struct(">h")


def _topic_partitions(name: str) -> Field:
    return Field(name, "[]TopicPartitions", "0+", fields=[
        Field("topic_id", "uuid", "0+"),
        Field("partitions", "[]int32", "0+"),
    ])


VALUES: dict[int, Struct] = {
    GROUP_METADATA: Struct("ConsumerGroupMetadataValue", [
        Field("epoch", "int32", "0+"),
        Field("metadata_hash", "int64", "0+", tag=0, tagged="0+"),
    ], flexible="0+"),
    PARTITION_METADATA: Struct("ConsumerGroupPartitionMetadataValue", [
        Field("topics", "[]TopicMetadata", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("topic_name", "string", "0+"),
            Field("num_partitions", "int32", "0+"),
            Field("partition_metadata", "[]PartitionMetadata", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("racks", "[]string", "0+"),
            ]),
        ]),
    ], flexible="0+"),
    MEMBER_METADATA: Struct("ConsumerGroupMemberMetadataValue", [
        Field("instance_id", "string", "0+", nullable="0+"),
        Field("rack_id", "string", "0+", nullable="0+"),
        Field("client_id", "string", "0+"),
        Field("client_host", "string", "0+"),
        Field("subscribed_topic_names", "[]string", "0+"),
        Field("subscribed_topic_regex", "string", "0+", nullable="0+"),
        Field("rebalance_timeout_ms", "int32", "0+", default=-1),
        Field("server_assignor", "string", "0+", nullable="0+"),
        Field("classic_member_metadata", "ClassicMemberMetadata", "0+", nullable="0+", default=None,
              tag=0, tagged="0+", fields=[
                  Field("session_timeout_ms", "int32", "0+"),
                  Field("supported_protocols", "[]ClassicProtocol", "0+", fields=[
                      Field("name", "string", "0+"),
                      Field("metadata", "bytes", "0+"),
                  ]),
              ]),
    ], flexible="0+"),
    TARGET_ASSIGNMENT_METADATA: Struct("ConsumerGroupTargetAssignmentMetadataValue", [
        Field("assignment_epoch", "int32", "0+"),
    ], flexible="0+"),
    TARGET_ASSIGNMENT_MEMBER: Struct("ConsumerGroupTargetAssignmentMemberValue", [
        _topic_partitions("topic_partitions"),
    ], flexible="0+"),
    CURRENT_MEMBER_ASSIGNMENT: Struct("ConsumerGroupCurrentMemberAssignmentValue", [
        Field("member_epoch", "int32", "0+"),
        Field("previous_member_epoch", "int32", "0+"),
        Field("state", "int8", "0+"),
        _topic_partitions("assigned_partitions"),
        _topic_partitions("partitions_pending_revocation"),
    ], flexible="0+"),
    REGULAR_EXPRESSION: Struct("ConsumerGroupRegularExpressionValue", [
        Field("topics", "[]string", "0+"),
        Field("version", "int64", "0+"),
        Field("timestamp", "int64", "0+"),
    ], flexible="0+"),
}

_GROUP_KEY = Struct("ConsumerGroupKey", [Field("group_id", "string", "0+")])
_MEMBER_KEY = Struct("ConsumerGroupMemberKey", [Field("group_id", "string", "0+"),
                                                Field("member_id", "string", "0+")])
_REGEX_KEY = Struct("ConsumerGroupRegularExpressionKey", [Field("group_id", "string", "0+"),
                                                          Field("regular_expression", "string", "0+")])


class ConsumerRecordError(ValueError):
    """A consumer-group record this broker cannot read."""


@dataclass(frozen=True)
class ConsumerGroupKey:
    """The key of one consumer-group record; ``group`` as on every key."""
    type: int
    group: str
    member_id: str = ""
    regular_expression: str = ""


def _key_schema(record_type: int) -> Struct:
    if record_type in _MEMBER_KEYS:
        return _MEMBER_KEY
    if record_type == REGULAR_EXPRESSION:
        return _REGEX_KEY
    return _GROUP_KEY


def encode_key(key: ConsumerGroupKey) -> bytes:
    schema = _key_schema(key.type)
    fields: dict[str, str] = {"group_id": key.group}
    if schema is _MEMBER_KEY:
        fields["member_id"] = key.member_id
    elif schema is _REGEX_KEY:
        fields["regular_expression"] = key.regular_expression
    return _VERSION.pack(key.type) + encode_struct(schema, 0, fields)


def decode_key(record_type: int, data: bytes) -> ConsumerGroupKey:
    try:
        obj = decode_struct(_key_schema(record_type), 0, memoryview(data)[2:])
    except ProtocolDecodeError as exc:
        raise ConsumerRecordError(f"bad consumer group key type {record_type}: {exc}") from None
    return ConsumerGroupKey(record_type, obj.group_id, getattr(obj, "member_id", ""),
                            getattr(obj, "regular_expression", ""))


def encode_value(record_type: int, value) -> bytes:
    return _VERSION.pack(VALUE_VERSION) + encode_struct(VALUES[record_type], VALUE_VERSION, value)


def decode_value(record_type: int, data: bytes):
    if data is None or len(data) < 2:
        raise ConsumerRecordError("value shorter than its version")
    version = _VERSION.unpack_from(data)[0]
    if version != VALUE_VERSION:
        raise ConsumerRecordError(f"unknown {VALUES[record_type].name} version {version}")
    try:
        return decode_struct(VALUES[record_type], VALUE_VERSION, memoryview(data)[2:])
    except ProtocolDecodeError as exc:
        raise ConsumerRecordError(f"bad {VALUES[record_type].name}: {exc}") from None


def value(record_type: int, **fields):
    """A value object of `record_type` (its schema's data class)."""
    return VALUES[record_type].data_class(**fields)


def topic_partitions(assignment) -> list:
    """An assignment (topic id -> partitions) in the records' layout, sorted."""
    cls = VALUES[TARGET_ASSIGNMENT_MEMBER].fields[0].nested.data_class
    return [cls(topic_id=topic_id, partitions=sorted(parts))
            for topic_id, parts in sorted(assignment.items(), key=lambda item: str(item[0])) if parts]


def assignment_of(items) -> dict[uuid.UUID, frozenset[int]]:
    return {item.topic_id: frozenset(item.partitions) for item in items if item.partitions}

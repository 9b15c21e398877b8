"""Records of the `__consumer_offsets` topic: keys, values and partitioning.

Every record has a key; a null value is a tombstone (an offset or a group
deleted or expired). Both key and value start with an int16 version that
also says which kind of record it is. Big-endian, classic encoding (int16
string lengths, int32 array counts and bytes lengths; -1 is null) for every
version written here; versions 4 of the values (flexible: compact lengths
and tagged fields) are read too. Source: apache/kafka group-coordinator
`src/main/resources/common/message/{OffsetCommitKey,OffsetCommitValue,
GroupMetadataKey,GroupMetadataValue}.json` and GroupMetadataManager.

Key::

    version i16: 0 or 1 = offset commit, 2 = group metadata
    offset commit  (0, 1): group string | topic string | partition i32
    group metadata (2):    group string

Offset commit value (written: version 1 when the commit carried a retention
time (OffsetCommit v2-4), else version 3)::

    version i16 | offset i64 | [v3+ leader_epoch i32] | metadata string
    | commit_timestamp i64 | [v1 only: expire_timestamp i64]

Group metadata value (written: version 3)::

    version i16 | protocol_type string | generation i32
    | protocol string (nullable) | leader string (nullable)
    | [v2+ current_state_timestamp i64]
    | members [ member_id string | [v3+ group_instance_id string (nullable)]
                | client_id string | client_host string
                | [v1+ rebalance_timeout i32] | session_timeout i32
                | subscription bytes | assignment bytes ]

Partition of a group: abs(Java String.hashCode(group_id)) % partitions,
where hashCode runs over UTF-16 code units in int32 arithmetic and abs maps
Integer.MIN_VALUE to 0 (Kafka's Utils.abs).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kcore.protocol import decode_struct, encode_struct
from kcore.protocol.exceptions import ProtocolDecodeError
from kcore.protocol.schema import Field, Struct

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_VERSION = struct.Struct(">h")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_VERSION_OFFSET = struct.Struct(">hq")
_VERSION_OFFSET_EPOCH = struct.Struct(">hqi")
_TIMESTAMPS = struct.Struct(">qq")

OFFSET_COMMIT_KEY = Struct("OffsetCommitKey", [
    Field("group", "string", "0+"),
    Field("topic", "string", "0+"),
    Field("partition", "int32", "0+"),
])

GROUP_METADATA_KEY = Struct("GroupMetadataKey", [
    Field("group", "string", "0+"),
])

OFFSET_COMMIT_VALUE = Struct("OffsetCommitValue", [
    Field("offset", "int64", "0+"),
    Field("leader_epoch", "int32", "3+", default=-1),
    Field("metadata", "string", "0+"),
    Field("commit_timestamp", "int64", "0+"),
    Field("expire_timestamp", "int64", "1", default=-1),
], flexible="4+")

GROUP_METADATA_VALUE = Struct("GroupMetadataValue", [
    Field("protocol_type", "string", "0+"),
    Field("generation", "int32", "0+"),
    Field("protocol", "string", "0+", nullable="0+"),
    Field("leader", "string", "0+", nullable="0+"),
    Field("current_state_timestamp", "int64", "2+", default=-1),
    Field("members", "[]MemberMetadata", "0+", fields=[
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "3+", nullable="3+"),
        Field("client_id", "string", "0+"),
        Field("client_host", "string", "0+"),
        Field("rebalance_timeout", "int32", "1+"),
        Field("session_timeout", "int32", "0+"),
        Field("subscription", "bytes", "0+"),
        Field("assignment", "bytes", "0+"),
    ]),
], flexible="4+")

MAX_VALUE_VERSION = 4


class RecordFormatError(ValueError):
    """A __consumer_offsets record this broker cannot read."""


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1  # -1: none (expiry follows offsets.retention.minutes)


@dataclass(frozen=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberValue] = field(default_factory=list)


# -- keys ---------------------------------------------------------------------------

def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    # Packed by hand: the layout is fixed (no flexible version) and commits
    # are the hot path; tests check it against the schema encoding.
    group_bytes, topic_bytes = group.encode(), topic.encode()
    return b"".join((_VERSION.pack(OFFSET_COMMIT_KEY_VERSION), _I16.pack(len(group_bytes)),
                     group_bytes, _I16.pack(len(topic_bytes)), topic_bytes, _I32.pack(partition)))


def encode_group_key(group: str) -> bytes:
    return _VERSION.pack(GROUP_METADATA_KEY_VERSION) + encode_struct(
        GROUP_METADATA_KEY, 0, {"group": group})


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    version = _read_version(data, "key")
    try:
        if version in OFFSET_COMMIT_KEY_VERSIONS:
            return _decode_offset_key(data)
        if version == GROUP_METADATA_KEY_VERSION:
            return GroupKey(decode_struct(GROUP_METADATA_KEY, 0, memoryview(data)[2:]).group)
    except (ProtocolDecodeError, struct.error, UnicodeDecodeError) as exc:
        raise RecordFormatError(f"bad key version {version}: {exc}") from None
    raise RecordFormatError(f"unknown key version {version}")


def _decode_offset_key(data: bytes) -> OffsetKey:
    # Unpacked by hand for replay speed (every commit ever made is read at
    # start-up); the schema decoder is the reference in the tests.
    group_length, = _I16.unpack_from(data, 2)
    group_end = 4 + group_length
    topic_length, = _I16.unpack_from(data, group_end)
    topic_end = group_end + 2 + topic_length
    partition, = _I32.unpack_from(data, topic_end)
    if group_length < 0 or topic_length < 0 or topic_end + 4 != len(data):
        raise struct.error("offset commit key lengths do not add up")
    return OffsetKey(str(data[4:group_end], "utf-8"), str(data[group_end + 2:topic_end], "utf-8"),
                     partition)


# -- values -------------------------------------------------------------------------

def encode_offset_value(value: OffsetValue) -> bytes:
    metadata = value.metadata.encode()
    if value.expire_timestamp >= 0:
        return b"".join((_VERSION_OFFSET.pack(OFFSET_VALUE_VERSION_WITH_EXPIRY, value.offset),
                         _I16.pack(len(metadata)), metadata,
                         _TIMESTAMPS.pack(value.commit_timestamp, value.expire_timestamp)))
    return b"".join((_VERSION_OFFSET_EPOCH.pack(OFFSET_VALUE_VERSION, value.offset, value.leader_epoch),
                     _I16.pack(len(metadata)), metadata, _I64.pack(value.commit_timestamp)))


def decode_offset_value(data: bytes) -> OffsetValue:
    version = _read_version(data, "offset value")
    if version in (OFFSET_VALUE_VERSION, OFFSET_VALUE_VERSION_WITH_EXPIRY):
        try:
            return _decode_offset_value(version, data)
        except (struct.error, UnicodeDecodeError) as exc:
            raise RecordFormatError(f"bad OffsetCommitValue v{version}: {exc}") from None
    obj = _decode_value(OFFSET_COMMIT_VALUE, version, data)
    return OffsetValue(obj.offset, obj.leader_epoch, obj.metadata, obj.commit_timestamp,
                       obj.expire_timestamp if version == 1 else -1)


def _decode_offset_value(version: int, data: bytes) -> OffsetValue:
    """Versions 1 and 3 unpacked by hand (replay speed, as for keys)."""
    if version == OFFSET_VALUE_VERSION:
        _, offset, leader_epoch = _VERSION_OFFSET_EPOCH.unpack_from(data)
        position = _VERSION_OFFSET_EPOCH.size
    else:
        _, offset = _VERSION_OFFSET.unpack_from(data)
        leader_epoch, position = -1, _VERSION_OFFSET.size
    length, = _I16.unpack_from(data, position)
    end = position + 2 + length
    metadata = str(data[position + 2:end], "utf-8")
    if version == OFFSET_VALUE_VERSION:
        commit_timestamp, = _I64.unpack_from(data, end)
        expire_timestamp, size = -1, end + 8
    else:
        commit_timestamp, expire_timestamp = _TIMESTAMPS.unpack_from(data, end)
        size = end + 16
    if length < 0 or size != len(data):
        raise struct.error("offset commit value lengths do not add up")
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def encode_group_value(value: GroupValue) -> bytes:
    return _VERSION.pack(GROUP_VALUE_VERSION) + encode_struct(
        GROUP_METADATA_VALUE, GROUP_VALUE_VERSION, value)


def decode_group_value(data: bytes) -> GroupValue:
    version = _read_version(data, "group value")
    obj = _decode_value(GROUP_METADATA_VALUE, version, data)
    members = [MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                           m.rebalance_timeout if version >= 1 else m.session_timeout,
                           m.session_timeout, bytes(m.subscription), bytes(m.assignment))
               for m in obj.members]
    return GroupValue(obj.protocol_type, obj.generation, obj.protocol, obj.leader,
                      obj.current_state_timestamp, members)


def _decode_value(schema: Struct, version: int, data: bytes):
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise RecordFormatError(f"unknown {schema.name} version {version}")
    try:
        return decode_struct(schema, version, memoryview(data)[2:])
    except ProtocolDecodeError as exc:
        raise RecordFormatError(f"bad {schema.name} v{version}: {exc}") from None


def _read_version(data: bytes, what: str) -> int:
    if data is None or len(data) < 2:
        raise RecordFormatError(f"{what} shorter than its version")
    return _VERSION.unpack_from(data)[0]


# -- partitioning -----------------------------------------------------------------

def java_string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code
    units, wrapping in int32."""
    units = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + ((units[index] << 8) | units[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def partition_for(group_id: str, num_partitions: int) -> int:
    hashed = java_string_hash(group_id)
    positive = 0 if hashed == -(1 << 31) else abs(hashed)
    return positive % num_partitions

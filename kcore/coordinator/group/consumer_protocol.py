"""The topics in a consumer's subscription (JoinGroup member metadata).

Members of a group with protocol type "consumer" send, per assignor, a
ConsumerProtocolSubscription (apache/kafka clients/src/main/resources/
common/message/ConsumerProtocolSubscription.json; never flexible)::

    version i16 | topics [string] (i32 count, i16-length strings)
    | user_data bytes (nullable) | [v1+ owned_partitions] | [v2+ generation_id]
    | [v3+ rack_id]

Only `topics` is read: it comes first in every version, and Kafka reads
unknown newer versions with the format it knows. The coordinator needs the
topics to refuse OffsetDelete on subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC)
and to expire offsets of topics a stable group no longer consumes.

The leader's assignment of each member (SyncGroup) is a
ConsumerProtocolAssignment, also never flexible::

    version i16 | assigned_partitions [topic string, partitions [i32]]
    | user_data bytes (nullable)

which the console reads to show who consumes what.
"""
from __future__ import annotations

import struct

from kcore.protocol import encode_struct
from kcore.protocol.codec import read_struct
from kcore.protocol.exceptions import ProtocolDecodeError
from kcore.protocol.schema import Field, Struct

PROTOCOL_TYPE = "consumer"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topic names in one member's subscription, or None when the bytes
    are not a readable subscription."""
    try:
        position = _I16.size
        count, = _I32.unpack_from(metadata, position)
        position += _I32.size
        if count < 0 or count > len(metadata):
            return None
        topics = set()
        for _ in range(count):
            length, = _I16.unpack_from(metadata, position)
            position += _I16.size
            if length < 0 or position + length > len(metadata):
                return None
            topics.add(bytes(metadata[position:position + length]).decode("utf-8"))
            position += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def assigned_partitions(assignment: bytes) -> list[tuple[str, int]] | None:
    """(topic, partition) of one member's assignment, or None when the
    bytes are not a readable assignment (another protocol type's)."""
    try:
        position = _I16.size
        count, = _I32.unpack_from(assignment, position)
        position += _I32.size
        if count < 0 or count > len(assignment):
            return None
        partitions = []
        for _ in range(count):
            length, = _I16.unpack_from(assignment, position)
            position += _I16.size
            if length < 0 or position + length > len(assignment):
                return None
            topic = bytes(assignment[position:position + length]).decode("utf-8")
            position += length
            n, = _I32.unpack_from(assignment, position)
            position += _I32.size
            if n < 0 or position + 4 * n > len(assignment):
                return None
            partitions += [(topic, index) for index in struct.unpack_from(f">{n}i", assignment, position)]
            position += 4 * n
        return partitions
    except (struct.error, UnicodeDecodeError):
        return None


# The full ConsumerProtocolSubscription and ConsumerProtocolAssignment, for
# classic members of consumer-protocol groups (migration.py): Kafka's
# coordinator reads each member's owned partitions and rack, and writes its
# assignment in the version the member's subscription came in.
MAX_VERSION = 3
SUBSCRIPTION = Struct("ConsumerProtocolSubscription", [
    Field("topics", "[]string", "0+"),
    Field("user_data", "bytes", "0+", nullable="0+", default=None),
    Field("owned_partitions", "[]TopicPartition", "1+", fields=[
        Field("topic", "string", "1+"),
        Field("partitions", "[]int32", "1+"),
    ]),
    Field("generation_id", "int32", "2+", default=-1),
    Field("rack_id", "string", "3+", nullable="3+", default=None),
])
ASSIGNMENT = Struct("ConsumerProtocolAssignment", [
    Field("assigned_partitions", "[]TopicPartition", "0+", fields=[
        Field("topic", "string", "0+"),
        Field("partitions", "[]int32", "0+"),
    ]),
    Field("user_data", "bytes", "0+", nullable="0+", default=None),
])


def version_of(data: bytes) -> int:
    """The version a subscription or assignment starts with, capped at the
    newest known (Kafka reads a newer one with its newest format)."""
    return min(max(_I16.unpack_from(data)[0], 0), MAX_VERSION)


def decode_subscription(metadata: bytes):
    """The subscription as an object (topics, owned_partitions, rack_id,
    ...), or None when the bytes are not one."""
    try:
        version = version_of(metadata)
        return read_struct(SUBSCRIPTION, version, memoryview(metadata), _I16.size, flexible=False)[0]
    except (ProtocolDecodeError, struct.error):
        return None


def encode_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    version = min(max(version, 0), MAX_VERSION)
    body = {"assigned_partitions": [{"topic": topic, "partitions": sorted(parts)}
                                    for topic, parts in sorted(partitions.items())]}
    return _I16.pack(version) + encode_struct(ASSIGNMENT, version, body, flexible=False)


def encode_subscription(topics: list[str], version: int = 0) -> bytes:
    return _I16.pack(version) + encode_struct(SUBSCRIPTION, version, {"topics": sorted(topics)},
                                              flexible=False)

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

"""The cluster metadata value types, shared by every layer above protocol/.

Controllers record them, the stores persist them, replication and the
handlers read them; so they live here, low in the layer map, and import
nothing of kcore but protocol error codes.

- ``TopicPartition``: ``(topic, partition)``, the key of every
  per-partition map.

- ``TopicInfo``: a topic as the controller records it (id, partition count,
  replica assignment, config overrides).
- ``PartitionState``: leader, leader epoch, ISR and replicas of one
  partition, plus ``partition_epoch`` (Kafka's zkVersion of the partition's
  state znode, bumped on every change, which fences concurrent writers)
  and its topic's id.

Topic ids (KIP-516): a topic gets a random UUID when it is created, so a
topic deleted and created again under the same name is another topic to
clients and to the replicas on disk (``partition.metadata``). The zero
UUID (``NO_TOPIC_ID``) means "not known": a topic created before ids
existed, until its controller gives it one. Kafka writes ids as url-safe
base64 without padding (``Uuid.toString``): ``topic_id_to_string``.
- ``BrokerInfo``: a live broker's id, advertised address, rack and epoch
  (the czxid of its registration, which fences a restarted broker's
  predecessor).

- ``TopicError``: a topic operation refused with Kafka's error code;
  ``MetadataUnavailableError``, one of them, when the metadata's store
  (ZooKeeper) does not answer.

Brokers learn partition states only through the controller-to-broker path
(LeaderAndIsr, UpdateMetadata, StopReplica), whatever the controller.
"""
from __future__ import annotations

import base64
import binascii
import re
import uuid
from dataclasses import dataclass, field

from kcore.protocol.errors import ErrorCode
from kcore.protocol.primitives import ZERO_UUID

# Kafka's Topic.validate: legal characters and 249 = 255 minus room for
# "-<partition>" and the ".deleted"-style suffixes in directory names.
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
NO_LEADER = -1
NO_TOPIC_ID = ZERO_UUID

TopicPartition = tuple[str, int]


class TopicError(Exception):
    """A topic operation failed; ``error_code`` is Kafka's code for it."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class MetadataUnavailableError(TopicError):
    """The store of the cluster metadata (ZooKeeper) did not answer, so a
    change could not be made or confirmed. REQUEST_TIMED_OUT: what a Kafka
    client sees when its broker cannot complete a change in time."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.REQUEST_TIMED_OUT, message)


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)
    # partition -> replica broker ids, preferred leader first (while a
    # partition moves: its full replica set, reassignment.py).
    assignment: dict[int, list[int]] = field(default_factory=dict)
    # partition -> replicas being added / removed by a reassignment in progress.
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 0
    controller_epoch: int = 0
    topic_id: uuid.UUID = NO_TOPIC_ID

    @property
    def topic_partition(self) -> TopicPartition:
        return self.topic, self.partition


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    broker_epoch: int = -1
    listener: str = "PLAINTEXT"
    # (listener name, host, port) of every advertised listener; host/port
    # above are those of ``listener``, the inter-broker one.
    endpoints: tuple[tuple[str, str, int], ...] = ()
    # (listener name, security protocol), for ZooKeeper's registration.
    security_protocols: tuple[tuple[str, str], ...] = ()

    def endpoint(self, listener: str) -> tuple[str, int]:
        """Where a client that came in on ``listener`` reaches this broker
        (Kafka answers Metadata with the endpoints of the client's listener)."""
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return self.host, self.port


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``; ValueError unless ``text`` is 22
    base64 characters (16 bytes)."""
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a topic id (22 base64 characters)")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except (binascii.Error, ValueError):
        raise ValueError(f"{text!r} is not a topic id (22 base64 characters)") from None


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not TOPIC_NAME.match(name):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


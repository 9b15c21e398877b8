"""Topic ids (KIP-516): one seam, ``TopicIds``, between a topic's name and
its id, for Metadata v10+, the consumer-protocol groups (KIP-848) and the
share groups (KIP-932).

ShareGroupHeartbeat, ShareFetch, ShareAcknowledge and ConsumerGroupHeartbeat
name topics by id, and the share-group state in ``__share_group_state`` is
keyed by it, so every broker must map them the same way. The ids are the
controller's: created with the topic and kept by the metadata store
(ZooKeeper's /brokers/topics/T, a single node's metadata file), so they
are the same on every broker, survive restarts, and a topic deleted and
created again gets a new one, as in Kafka.

Not thread-safe; owned by the broker's event loop.
"""
from __future__ import annotations

import uuid
from typing import Protocol

from kcore.controller.base import Controller
from kcore.protocol.primitives import ZERO_UUID
from kcore.replication.metadata_cache import MetadataCache


class TopicIds(Protocol):
    def id_of(self, topic: str) -> uuid.UUID:
        """The id of a topic, ZERO_UUID for one that does not exist."""
        ...

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The name of a live topic with this id, or None."""
        ...


class ControllerTopicIds:
    """The controller's view of topic ids; the id -> name dict is rebuilt
    when an id is not found in it (a topic created since) or the metadata
    version moved (one deleted since)."""

    def __init__(self, controller: Controller, metadata_cache: MetadataCache) -> None:
        self._controller = controller
        self._metadata_cache = metadata_cache
        self._names: tuple[int, dict[uuid.UUID, str]] = (-1, {})

    def id_of(self, topic: str) -> uuid.UUID:
        info = self._controller.topic(topic)
        return info.topic_id if info is not None else ZERO_UUID

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        version = self._metadata_cache.version
        if self._names[0] != version or topic_id not in self._names[1]:
            names = {}
            for name in self._controller.topic_names():
                info = self._controller.topic(name)
                if info is not None:
                    names[info.topic_id] = name
            self._names = (version, names)
        return self._names[1].get(topic_id)

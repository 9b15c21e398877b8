"""Topic ids (KIP-516): one seam, ``TopicIds``, between a topic's name and
its id, for Metadata v10+, the consumer-protocol groups (KIP-848) and the
share groups (KIP-932).

ShareGroupHeartbeat, ShareFetch, ShareAcknowledge and ConsumerGroupHeartbeat
name topics by id, and the share-group state in ``__share_group_state`` is
keyed by it, so every broker must map them the same way. The ids are the
controller's, in every broker's metadata cache: created with the topic and
kept by the metadata store
(ZooKeeper's /brokers/topics/T, a single node's metadata file), so they
are the same on every broker, survive restarts, and a topic deleted and
created again gets a new one, as in Kafka.

Not thread-safe; owned by the broker's event loop.
"""
from __future__ import annotations

import uuid
from typing import Protocol

from kcore.replication.metadata_cache import MetadataCache


class TopicIds(Protocol):
    def id_of(self, topic: str) -> uuid.UUID:
        """The id of a topic, ZERO_UUID for one that does not exist."""
        ...

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The name of a live topic with this id, or None."""
        ...


class CachedTopicIds:
    """The ids of this broker's metadata cache, which the controller fills
    from what it persisted (the ids Metadata answers)."""

    def __init__(self, metadata_cache: MetadataCache) -> None:
        self._metadata_cache = metadata_cache

    def id_of(self, topic: str) -> uuid.UUID:
        return self._metadata_cache.topic_id(topic)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._metadata_cache.topic_name(topic_id)

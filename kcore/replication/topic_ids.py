"""Topic ids (KIP-516) as the share-group APIs and Metadata v10+ see them:
one seam, ``TopicIds``, between a topic's name and its id.

ShareGroupHeartbeat, ShareFetch and ShareAcknowledge name topics by id,
and the share-group state in ``__share_group_state`` is keyed by it, so a
client learns ids from Metadata v10+ and every broker must map them the
same way. Until the cluster metadata carries ids of its own,
``DerivedTopicIds`` derives each topic's id from its name (a UUID version 5
in a namespace of kcore's): the same on every broker and across restarts
with no coordination. Its limit: a topic deleted and created again keeps
its id, where Kafka gives it a new one (its share-group state is deleted
with the topic, so nothing stale is read back). A metadata cache that
records ids replaces it behind the same two lookups.

Not thread-safe; owned by the broker's event loop.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Protocol

# The namespace of derived topic ids (a fixed, random UUID).
TOPIC_ID_NAMESPACE = uuid.UUID("5f1c2a7e-8d3b-4e6f-9a0c-1b2d3e4f5a6b")


class TopicIds(Protocol):
    def id_of(self, topic: str) -> uuid.UUID:
        """The id of a topic (known or not)."""
        ...

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The name of a live topic with this id, or None."""
        ...


def derived_topic_id(topic: str) -> uuid.UUID:
    return uuid.uuid5(TOPIC_ID_NAMESPACE, topic)


class DerivedTopicIds:
    """Ids derived from names; names found among ``topic_names()``."""

    def __init__(self, topic_names: Callable[[], Iterable[str]]) -> None:
        self._topic_names = topic_names
        self._names: dict[uuid.UUID, str] = {}

    def id_of(self, topic: str) -> uuid.UUID:
        return derived_topic_id(topic)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        name = self._names.get(topic_id)
        if name is None:
            # A topic created since the last miss: look again (a dict of
            # names; ShareFetch asks this once per unknown id).
            self._names = {derived_topic_id(topic): topic for topic in self._topic_names()}
            name = self._names.get(topic_id)
        return name

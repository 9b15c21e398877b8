"""This broker's view of the cluster, as the controller last sent it.

Fed only by UpdateMetadata (``ReplicaManager.on_update_metadata``, whatever
the controller); read by Metadata, FindCoordinator, DescribeCluster and
the follower fetchers (the leader's address). Kafka's ``MetadataCache``.

Each topic's id comes with its partition states (UpdateMetadata v7), so
names map to ids and ids to names (Metadata v10+, Produce v13,
DeleteTopics v6 and DescribeTopicPartitions name topics by id). A state
under another id than the one cached is a topic re-created under the same
name: the old topic's partitions are forgotten.

Not thread-safe; owned by the broker's event loop. Lookups are dict reads:
Metadata is answered from here on every client refresh. ``responses`` is
where handlers keep answers they encoded from this state (Metadata of
10,000 partitions took ~25 ms to build and encode); every update empties
it.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from kcore.metadata import NO_LEADER, NO_TOPIC_ID, BrokerInfo, PartitionState


class MetadataCache:
    def __init__(self) -> None:
        self.controller_id = -1
        self.brokers: dict[int, BrokerInfo] = {}
        self._topics: dict[str, dict[int, PartitionState]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self.responses: dict[object, object] = {}
        # Bumped by every update: consumer-protocol groups recompute their
        # subscribed topics' metadata and regexes only when it moved.
        self.version = 0

    def update(self, controller_id: int, brokers: Sequence[BrokerInfo],
               states: Iterable[PartitionState], deleted: Iterable[str] = ()) -> None:
        self.responses.clear()
        self.version += 1
        self.controller_id = controller_id
        self.brokers = {broker.broker_id: broker for broker in brokers}
        for topic in deleted:
            self._forget(topic)
        for state in states:
            if state.topic_id != NO_TOPIC_ID:
                if state.topic_id != self._topic_ids.get(state.topic, state.topic_id):
                    self._forget(state.topic)  # re-created under the same name
                self._topic_ids[state.topic] = state.topic_id
                self._topic_names[state.topic_id] = state.topic
            self._topics.setdefault(state.topic, {})[state.partition] = state

    def _forget(self, topic: str) -> None:
        self._topics.pop(topic, None)
        topic_id = self._topic_ids.pop(topic, None)
        if topic_id is not None:
            self._topic_names.pop(topic_id, None)

    # -- queries ------------------------------------------------------------------------
    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def contains(self, topic: str) -> bool:
        return topic in self._topics

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id; ``NO_TOPIC_ID`` when unknown."""
        return self._topic_ids.get(topic, NO_TOPIC_ID)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id; None when unknown."""
        return self._topic_names.get(topic_id)

    def partitions(self, topic: str) -> dict[int, PartitionState]:
        return self._topics.get(topic, {})

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self._topics.get(topic, {}).get(partition)

    def broker(self, broker_id: int) -> BrokerInfo | None:
        return self.brokers.get(broker_id)

    def address_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where a live broker takes inter-broker requests, or None."""
        broker = self.brokers.get(broker_id)
        return None if broker is None else (broker.host, broker.port)

    def leader_of(self, topic: str, partition: int) -> BrokerInfo | None:
        """The live leader's address, or None (unknown partition, no leader,
        leader not live)."""
        state = self.partition(topic, partition)
        if state is None or state.leader == NO_LEADER:
            return None
        return self.brokers.get(state.leader)

    def offline_replicas(self, state: PartitionState) -> list[int]:
        return [replica for replica in state.replicas if replica not in self.brokers]

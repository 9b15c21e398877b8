"""Cluster metadata as a client sees it: brokers, controller, topic partitions.

Built from a Metadata response (key 3): ``brokers`` (node_id, host, port,
rack), ``controller_id`` (v1+), ``cluster_id`` (v2+) and per topic its
error code, topic id (v10+, else the zero UUID) and partitions with
leader_id, leader_epoch (v7+, else -1), replica_nodes, isr_nodes and
offline_replicas (v5+).

These are the client's types; the broker's own records of brokers and
topics are kcore/metadata.py's. The client's ``TopicPartition`` is a
class, as in Kafka's clients; the broker keys its maps by the plain
``(topic, partition)`` tuple.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kcore.metadata import NO_TOPIC_ID

__all__ = ["BrokerMetadata", "PartitionMetadata", "TopicMetadata", "ClusterMetadata", "TopicPartition"]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    broker_id: int  # the Metadata response's node_id
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int
    is_internal: bool
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    topic_id: uuid.UUID = NO_TOPIC_ID

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """One Metadata answer; immutable, replaced whole on refresh."""

    brokers: dict[int, BrokerMetadata]
    controller_id: int
    cluster_id: str | None
    topics: dict[str, TopicMetadata]

    @classmethod
    def from_response(cls, body: Any) -> ClusterMetadata:
        brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port, b.rack)
                   for b in body.brokers}
        topics = {}
        for topic in body.topics:
            if topic.name is None:  # an id asked for (v12+) that the broker does not know
                continue
            partitions = {
                p.partition_index: PartitionMetadata(
                    topic.name, p.partition_index, p.leader_id, p.leader_epoch,
                    tuple(p.replica_nodes), tuple(p.isr_nodes),
                    tuple(p.offline_replicas or ()), p.error_code)
                for p in topic.partitions}
            topics[topic.name] = TopicMetadata(topic.name, topic.error_code, topic.is_internal,
                                               dict(sorted(partitions.items())), topic.topic_id)
        return cls(brokers, body.controller_id, body.cluster_id, topics)

    def merged(self, newer: ClusterMetadata) -> ClusterMetadata:
        """``newer`` with the topics it did not ask about kept from ``self``."""
        return ClusterMetadata(newer.brokers, newer.controller_id, newer.cluster_id,
                               {**self.topics, **newer.topics})

    def leader_for(self, topic: str, partition: int) -> int:
        """Leader broker id, or -1 when unknown."""
        info = self.topics.get(topic)
        if info is None or partition not in info.partitions:
            return -1
        return info.partitions[partition].leader_id

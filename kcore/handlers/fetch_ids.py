"""Fetch v13+ topic ids (KIP-516), v15 replica state and v16 leader hints.

From v13 a fetch names topics, and the topics it forgets, by id, and is
answered by id. The handler works by name: ``resolve_names`` fills each
request topic's name from the metadata cache, "" for an id the broker does
not know, which is answered UNKNOWN_TOPIC_ID (Kafka's KafkaApis) and kept
out of the fetch session. A session's partitions remember the id they were
added under: once the name no longer carries that id the partition answers
INCONSISTENT_TOPIC_ID (the topic was re-created, Kafka's ReplicaManager
readFromLog) or, with no topic of that name left, UNKNOWN_TOPIC_OR_PARTITION
(Kafka's metadata check), and a forgotten id is looked up among the
session's partitions first, so a deleted topic can still be forgotten.

v15 moves a follower's replica_id into the tagged replica_state (KIP-903;
kcore's followers still send v12, so its replica_epoch is not checked).
v16 answers NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH with the
partition's ``current_leader`` and the answer with those leaders'
``node_endpoints`` (KIP-951, the hints Produce v10+ gives, leader_hints.py).
"""
from __future__ import annotations

import uuid

from kcore.handlers.base import BrokerFacade
from kcore.handlers.leader_hints import LeaderHints
from kcore.metadata import NO_TOPIC_ID
from kcore.protocol.errors import ErrorCode
from kcore.protocol.messages.fetch import FetchResponseDict
from kcore.replication.fetch_session import FetchSession

TOPIC_IDS_VERSION = 13
REPLICA_STATE_VERSION = 15
LEADER_HINTS_VERSION = 16
UNKNOWN_ID = ""  # the name of a topic whose id the broker does not know
_HINTED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def normalize(broker: BrokerFacade, body, version: int) -> None:
    """Give a v13+ request's topics their names and a v15+ request its
    replica_id where older versions carry them, so that the handler reads
    every version alike."""
    if version >= REPLICA_STATE_VERSION:
        state = body.replica_state
        body.replica_id = state.replica_id if state is not None else -1
    if version >= TOPIC_IDS_VERSION:
        cache = broker.replica_manager.metadata_cache
        for topic in body.topics:
            topic.topic = cache.topic_name(topic.topic_id) or UNKNOWN_ID


def forgotten_names(broker: BrokerFacade, session: FetchSession, body,
                    version: int) -> list[tuple[str, int]]:
    """The (topic, partition) keys an incremental request forgets."""
    if version < TOPIC_IDS_VERSION:
        return [(topic.topic, index) for topic in body.forgotten_topics_data
                for index in topic.partitions]
    if not body.forgotten_topics_data:
        return []
    known = {cached.topic_id: key[0] for key, cached in session.partitions.items()}
    cache = broker.replica_manager.metadata_cache
    keys = []
    for topic in body.forgotten_topics_data:
        name = known.get(topic.topic_id) or cache.topic_name(topic.topic_id)
        if name is not None:
            keys += [(name, index) for index in topic.partitions]
    return keys


def inconsistent(broker: BrokerFacade, topic: str, topic_id: uuid.UUID) -> bool:
    """A session partition added under ``topic_id`` whose name now carries
    another id (the topic was deleted and created again)."""
    if topic_id == NO_TOPIC_ID:
        return False
    current = broker.replica_manager.metadata_cache.topic_id(topic)
    return current != NO_TOPIC_ID and current != topic_id


def add_leader_hints(broker: BrokerFacade, listener: str, answer: FetchResponseDict) -> None:
    """v16+: current_leader of each misdirected partition, node_endpoints of
    the answer (one pass over the answer; nothing for one without errors)."""
    hints: LeaderHints | None = None
    for topic in answer["responses"]:
        for data in topic["partitions"]:
            if data["error_code"] in _HINTED:
                hints = hints or LeaderHints(broker, listener)
                leader = hints.current_leader(topic["topic"], data["partition_index"])
                if leader is not None:
                    data["current_leader"] = leader
    if hints is not None:
        answer["node_endpoints"] = hints.node_endpoints()

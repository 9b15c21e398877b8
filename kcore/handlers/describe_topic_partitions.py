"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions,
a page at a time, for the admin clients of Kafka 3.7+.

As Kafka's DescribeTopicPartitionsRequestHandler answers, from this
broker's metadata cache:

- the topics asked for, sorted by name, or every topic the principal may
  describe when none is named; a named topic it may not describe gets
  TOPIC_AUTHORIZATION_FAILED (zero id, listed after the others), an
  unknown one UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for
  a name no topic could have;
- at most min(response_partition_limit, ``max.request.partition.size.limit``)
  partitions (and at least 1): the page ends inside a topic with a
  next_cursor at its next partition, or before a topic that did not fit
  with a cursor at its partition 0; the last page has no cursor;
- a cursor starts at its topic and partition; one whose topic is not
  among the topics named, or whose partition is negative, makes the
  request invalid: every topic named gets INVALID_REQUEST;
- each topic's authorized operations (KIP-430), and per partition the
  leader (-1 with LEADER_NOT_AVAILABLE when it is not live), leader
  epoch, replicas, ISR and offline replicas; kcore's ZooKeeper-mode
  controller keeps no eligible leader replicas (KIP-966), so those lists
  are empty.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics, authorized_operations
from kcore.handlers.base import BrokerFacade
from kcore.metadata import INTERNAL_TOPICS, NO_TOPIC_ID, TopicError, validate_topic_name
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation, ResourceType


async def handle(broker: BrokerFacade, context, request) -> dict:
    body = request.body
    cache = broker.replica_manager.metadata_cache
    every_topic = not body.topics
    cursor = body.cursor
    named = sorted({topic.name for topic in body.topics})
    if cursor is not None and (cursor.partition_index < 0 or (not every_topic and cursor.topic_name not in named)):
        return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
            _topic_error(topic.name, ErrorCode.INVALID_REQUEST) for topic in body.topics]}
    candidates = cache.topic_names() if every_topic else named
    if cursor is not None:
        candidates = [name for name in candidates if name >= cursor.topic_name]
    describable = allowed_topics(broker, context, AclOperation.DESCRIBE, candidates)
    limit = max(min(broker.config["max.request.partition.size.limit"], body.response_partition_limit), 1)
    topics, next_cursor = _page(cache, [name for name in candidates if name in describable], cursor, limit,
                                every_topic)
    for topic in topics:
        topic["topic_authorized_operations"] = authorized_operations(broker, context, ResourceType.TOPIC,
                                                                     topic["name"])
    if not every_topic:
        topics += [_topic_error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                   for name in candidates if name not in describable]
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _page(cache, names: list[str], cursor, limit: int, every_topic: bool) -> tuple[list[dict], dict | None]:
    """The topics of one page and the cursor of the next (Kafka's
    KRaftMetadataCache.describeTopicResponse)."""
    remaining = limit
    topics: list[dict] = []
    for name in names:
        if remaining == 0:
            return topics, {"topic_name": name, "partition_index": 0}
        states = cache.partitions(name)
        if not states:
            if not every_topic:
                topics.append(_unknown(name))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        indexes = sorted(index for index in states if index >= first)
        shown = indexes[:remaining]
        topics.append({"error_code": ErrorCode.NONE, "name": name, "topic_id": cache.topic_id(name),
                       "is_internal": name in INTERNAL_TOPICS,
                       "partitions": [_partition(cache, states[index]) for index in shown]})
        if len(indexes) > len(shown):
            return topics, {"topic_name": name, "partition_index": indexes[len(shown)]}
        remaining -= len(shown)
    return topics, None


def _partition(cache, state) -> dict:
    leader = state.leader if cache.broker(state.leader) is not None else -1
    return {"error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": state.partition, "leader_id": leader, "leader_epoch": state.leader_epoch,
            "replica_nodes": list(state.replicas), "isr_nodes": list(state.isr),
            "eligible_leader_replicas": [], "last_known_elr": [],
            "offline_replicas": cache.offline_replicas(state)}


def _unknown(name: str) -> dict:
    try:
        validate_topic_name(name)
    except TopicError:
        return _topic_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    return _topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _topic_error(name: str, code: int) -> dict:
    return {"error_code": code, "name": name, "topic_id": NO_TOPIC_ID, "is_internal": name in INTERNAL_TOPICS,
            "partitions": []}

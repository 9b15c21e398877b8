"""Metadata (key 3): brokers, controller, and each topic's partitions.

Answered from this broker's metadata cache, which the controller keeps
current on every broker (UpdateMetadata): leaders, leader epochs, replicas,
ISR and the replicas on brokers that are not live. A partition whose
leader is not live gets LEADER_NOT_AVAILABLE (clients retry). A topic the
controller knows but whose partitions have not reached the cache yet (just
created in a cluster) gets LEADER_NOT_AVAILABLE too.

An unknown topic is created when `auto.create.topics.enable` is on and the
request allows it (v4+ field; older versions always allow), as client test
suites assume. Names that could never be a topic get INVALID_TOPIC_EXCEPTION.

An answer about topics the cache holds is encoded once and kept in the
cache (``MetadataCache.responses``) until the next update: clients poll
Metadata, and building and encoding 10,000 partitions took ~25 ms of the
event loop each time. At most ``CACHED_RESPONSES`` answers are kept.

With an authorizer, only topics the principal may DESCRIBE appear; a topic
asked for by name that it may not describe, or may not create (CREATE on
the cluster or the topic) when it would be auto-created, gets
TOPIC_AUTHORIZATION_FAILED. Those answers depend on the principal and
are not kept.

v8+ may ask for authorized operations (KIP-430): each topic's, and the
cluster's (v8-10; 0 without DESCRIBE on the cluster), as Kafka's bit
fields; without an authorizer, every operation of the resource type.

Topic ids (KIP-516): v10+ answers each topic's id (zero for a topic that
does not exist or may not be described). v12+ may ask for topics by id,
as Kafka's KafkaApis answers: once any topic is asked for by id, only the
ids count; an unknown id gets UNKNOWN_TOPIC_ID and one the principal may
not describe TOPIC_AUTHORIZATION_FAILED, both with a null name, and no
topic is created. A topic id or a null name before v12 (or a null name
without an id) is an invalid request: every topic asked for gets
INVALID_REQUEST, as does the whole answer from v13 (its top-level
error_code).
"""
from __future__ import annotations

import uuid

from kcore.handlers.authz import (
    AUTHORIZED_OPERATIONS_OMITTED,
    allowed_topics,
    authorized_operations,
    cluster_authorized_operations,
    may_create_topic,
)
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import auto_create_topic
from kcore.metadata import INTERNAL_TOPICS, NO_TOPIC_ID, TopicError, validate_topic_name
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.protocol.frames import encode_body
from kcore.protocol.messages.metadata import (
    MetadataResponseDict,
    MetadataResponsePartitionDict,
    MetadataResponseTopicDict,
)
from kcore.security.acl import AclOperation, ResourceType

# Distinct requests (version, topic list) answered from memory; clients
# of one broker ask about a few topic lists each.
CACHED_RESPONSES = 256


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    cache = broker.replica_manager.metadata_cache
    all_topics = body.topics is None or (request.api_version == 0 and not body.topics)
    if not all_topics and _invalid_topics(request):
        return _invalid_request(broker, context, request, cache)
    topic_ids = [] if all_topics else [t.topic_id for t in body.topics if t.topic_id != NO_TOPIC_ID]
    if topic_ids:
        topics = _describe_by_id(broker, context, cache, topic_ids)
        return _response(broker, context, request, cache, topics)
    names = cache.topic_names() if all_topics else [t.name for t in body.topics]
    allow_create = broker.config["auto.create.topics.enable"] and (
        request.api_version < 4 or body.allow_auto_topic_creation)
    if broker.authorizer is not None:
        topics = await _describe_authorized(broker, context, cache, names, all_topics, allow_create)
        return _response(broker, context, request, cache, topics)
    # Each listener answers with its own endpoints.
    key = (ApiKey.METADATA, request.api_version, None if all_topics else tuple(names),
           broker.controller.cluster_id, context.listener, _operations_asked(request))
    cached = cache.responses.get(key)
    if cached is not None:
        return cached
    known = all(cache.contains(name) for name in names)
    topics = [await _describe_topic(broker, cache, name, allow_create) for name in names]
    response = _response(broker, context, request, cache, topics)
    if not known:
        return response
    if len(cache.responses) >= CACHED_RESPONSES:
        cache.responses.clear()
    encoded = cache.responses[key] = encode_body(ApiKey.METADATA, request.api_version, response)
    return encoded


def _invalid_topics(request) -> bool:
    """Ids or null names before v12, a null name without an id after."""
    version = request.api_version
    return any((t.name is None and (version < 12 or t.topic_id == NO_TOPIC_ID))
               or (t.topic_id != NO_TOPIC_ID and version < 12) for t in request.body.topics)


def _invalid_request(broker: BrokerFacade, context, request, cache) -> MetadataResponseDict:
    """Kafka's MetadataRequest.getErrorResponse: every topic asked for,
    INVALID_REQUEST; no brokers."""
    topics: list[MetadataResponseTopicDict] = [
        {**_topic_error(t.name or "", ErrorCode.INVALID_REQUEST), "topic_id": t.topic_id}
        for t in request.body.topics]
    response = _response(broker, context, request, cache, topics)
    response["brokers"] = []
    response["error_code"] = ErrorCode.INVALID_REQUEST
    return response


def _describe_by_id(broker: BrokerFacade, context, cache,
                    topic_ids: list[uuid.UUID]) -> list[MetadataResponseTopicDict]:
    """Topics asked for by id (v12+): known ones the principal may describe
    are described, never created."""
    known = {topic_id: cache.topic_name(topic_id) for topic_id in dict.fromkeys(topic_ids)}
    describable = allowed_topics(broker, context, AclOperation.DESCRIBE,
                                 [name for name in known.values() if name is not None])
    topics: list[MetadataResponseTopicDict] = []
    for topic_id, name in known.items():
        if name is None or name not in describable:
            code = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            topics.append({**_topic_error(None, code), "topic_id": topic_id})
        else:
            topics.append(_describe_known(cache, name))
    return topics


def _operations_asked(request) -> tuple[bool, bool]:
    """(cluster's, topics') authorized operations asked for (v8+)."""
    if request.api_version < 8:
        return False, False
    body = request.body
    return (request.api_version <= 10 and body.include_cluster_authorized_operations,
            body.include_topic_authorized_operations)


def _response(broker: BrokerFacade, context, request, cache,
              topics: list[MetadataResponseTopicDict]) -> MetadataResponseDict:
    cluster_asked, topics_asked = _operations_asked(request)
    if topics_asked:
        for topic in topics:
            name = topic["name"]
            if name is not None:
                topic["topic_authorized_operations"] = authorized_operations(
                    broker, context, ResourceType.TOPIC, name)
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if cluster_asked:
        cluster_operations = cluster_authorized_operations(broker, context)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.broker_id, "host": host, "port": port, "rack": b.rack}
                    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id)
                    for host, port in [b.endpoint(context.listener)]],
        "cluster_id": broker.controller.cluster_id,
        "controller_id": cache.controller_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations,
        "error_code": ErrorCode.NONE,
    }


async def _describe_authorized(broker, context, cache, names: list[str], all_topics: bool,
                               allow_create: bool) -> list[MetadataResponseTopicDict]:
    """Only topics the principal may DESCRIBE: the others are left out of
    an all-topics answer and refused by name otherwise. Creating one needs
    CREATE on the cluster or on the topic (Kafka's KafkaApis)."""
    describable = allowed_topics(broker, context, AclOperation.DESCRIBE, names)
    topics: list[MetadataResponseTopicDict] = []
    for name in names:
        if name not in describable:
            if not all_topics:
                topics.append(_topic_error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        create = allow_create and not cache.contains(name) and may_create_topic(broker, context, name)
        if allow_create and not create and not cache.contains(name) \
                and broker.controller.topic(name) is None:
            topics.append(_topic_error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        topics.append(await _describe_topic(broker, cache, name, create))
    return topics


async def _describe_topic(broker, cache, name: str, allow_create: bool) -> MetadataResponseTopicDict:
    if not cache.contains(name):
        if broker.controller.topic(name) is not None:
            return _topic_error(name, ErrorCode.LEADER_NOT_AVAILABLE)
        try:
            validate_topic_name(name)
        except TopicError:
            return _topic_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
        if not allow_create:
            return _topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            await auto_create_topic(broker, name)
        except TopicError as exc:
            if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                return _topic_error(name, exc.error_code)
        if not cache.contains(name):
            return _topic_error(name, ErrorCode.LEADER_NOT_AVAILABLE)
    return _describe_known(cache, name)


def _describe_known(cache, name: str) -> MetadataResponseTopicDict:
    partitions: list[MetadataResponsePartitionDict] = []
    for index, state in sorted(cache.partitions(name).items()):
        leader = state.leader if cache.broker(state.leader) is not None else -1
        partitions.append({
            "error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": index,
            "leader_id": leader,
            "leader_epoch": state.leader_epoch,
            "replica_nodes": list(state.replicas),
            "isr_nodes": list(state.isr),
            "offline_replicas": cache.offline_replicas(state),
        })
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "topic_id": cache.topic_id(name),
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _topic_error(name: str | None, code: int) -> MetadataResponseTopicDict:
    """A topic without partitions: an error, and a zero id (Kafka does
    not tell the id of a topic it refuses by name)."""
    return {"error_code": code, "name": name, "topic_id": NO_TOPIC_ID,
            "is_internal": name in INTERNAL_TOPICS, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

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
cluster's (0 without DESCRIBE on the cluster, v8-10 only), as Kafka's bit
fields; without an authorizer, every operation of the resource type.

v10+ answers each topic's id; v12 may name a topic by id alone (null
name), as consumer-protocol members do for the topic ids of their
assignment: an id no topic has gets UNKNOWN_TOPIC_ID, and a topic asked
for by id is never auto-created.
"""
from __future__ import annotations

from kcore.handlers.authz import (
    AUTHORIZED_OPERATIONS_OMITTED,
    allowed_topics,
    authorized_operations,
    cluster_authorized_operations,
    may_create_topic,
)
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import auto_create_topic
from kcore.metadata import INTERNAL_TOPICS, TopicError, validate_topic_name
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.protocol.frames import encode_body
from kcore.protocol.messages.metadata import (
    MetadataResponseDict,
    MetadataResponsePartitionDict,
    MetadataResponseTopicDict,
)
from kcore.protocol.primitives import ZERO_UUID
from kcore.security.acl import AclOperation, ResourceType

# Distinct requests (version, topic list) answered from memory; clients
# of one broker ask about a few topic lists each.
CACHED_RESPONSES = 256


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    cache = broker.replica_manager.metadata_cache
    all_topics = body.topics is None or (request.api_version == 0 and not body.topics)
    unknown_ids: list[MetadataResponseTopicDict] = []
    if all_topics:
        names = cache.topic_names()
    else:
        names, unknown_ids = _requested_names(broker, body.topics)
    allow_create = broker.config["auto.create.topics.enable"] and (
        request.api_version < 4 or body.allow_auto_topic_creation)
    if broker.authorizer is not None:
        topics = await _describe_authorized(broker, context, cache, names, all_topics, allow_create)
        return _response(broker, context, request, cache, topics + unknown_ids)
    # Each listener answers with its own endpoints.
    key = (ApiKey.METADATA, request.api_version, None if all_topics else tuple(names),
           broker.controller.cluster_id, context.listener, _operations_asked(request))
    cached = cache.responses.get(key)
    if cached is not None:
        return cached
    known = all(cache.contains(name) for name in names)
    topics = [await _describe_topic(broker, cache, name, allow_create) for name in names]
    response = _response(broker, context, request, cache, topics + unknown_ids)
    if not known or unknown_ids:
        return response
    if len(cache.responses) >= CACHED_RESPONSES:
        cache.responses.clear()
    encoded = cache.responses[key] = encode_body(ApiKey.METADATA, request.api_version, response)
    return encoded


def _requested_names(broker: BrokerFacade, topics) -> tuple[list[str], list[MetadataResponseTopicDict]]:
    """Names of the requested topics, those asked for by id (v12, null
    name) resolved through the controller's view; the ids no topic has
    come back as their UNKNOWN_TOPIC_ID answers."""
    by_id = None
    names: list[str] = []
    unknown: list[MetadataResponseTopicDict] = []
    for topic in topics:
        if topic.name is not None:
            names.append(topic.name)
            continue
        if by_id is None:
            by_id = topic_names_by_id(broker.controller)
        name = by_id.get(topic.topic_id)
        if name is None:
            unknown.append({"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None,
                            "topic_id": topic.topic_id, "is_internal": False, "partitions": [],
                            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
        else:
            names.append(name)
    return names, unknown


def topic_names_by_id(controller) -> dict:
    """topic id -> name of every topic the controller's view holds."""
    names = {}
    for name in controller.topic_names():
        info = controller.topic(name)
        if info is not None:
            names[info.topic_id] = name
    return names


def _topic_id(broker: BrokerFacade, name: str):
    info = broker.controller.topic(name)
    return info.topic_id if info is not None else ZERO_UUID


def _operations_asked(request) -> tuple[bool, bool]:
    """(cluster's, topics') authorized operations asked for (v8+)."""
    if request.api_version < 8:
        return False, False
    body = request.body
    cluster = request.api_version <= 10 and body.include_cluster_authorized_operations
    return cluster, body.include_topic_authorized_operations


def _response(broker: BrokerFacade, context, request, cache,
              topics: list[MetadataResponseTopicDict]) -> MetadataResponseDict:
    cluster_asked, topics_asked = _operations_asked(request)
    if topics_asked:
        for topic in topics:
            name = topic["name"]
            if name is None:
                continue
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
        "topic_id": _topic_id(broker, name),
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _topic_error(name: str, code: int) -> MetadataResponseTopicDict:
    return {"error_code": code, "name": name, "topic_id": ZERO_UUID, "is_internal": name in INTERNAL_TOPICS,
            "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

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
"""
from __future__ import annotations

from kcore.controller.metadata import INTERNAL_TOPICS, TopicError, validate_topic_name
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import auto_create_topic
from kcore.protocol.errors import ErrorCode

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    cache = broker.replica_manager.metadata_cache
    if body.topics is None or (request.api_version == 0 and not body.topics):
        names = cache.topic_names()
    else:
        names = [t.name for t in body.topics]
    allow_create = broker.config["auto.create.topics.enable"] and (
        request.api_version < 4 or body.allow_auto_topic_creation)
    topics = [await _describe_topic(broker, cache, name, allow_create) for name in names]
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.broker_id, "host": host, "port": port, "rack": b.rack}
                    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id)
                    for host, port in [b.endpoint(context.listener)]],
        "cluster_id": broker.controller.cluster_id,
        "controller_id": cache.controller_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


async def _describe_topic(broker, cache, name: str, allow_create: bool) -> dict:
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
    partitions = []
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
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _topic_error(name: str, code: int) -> dict:
    return {"error_code": code, "name": name, "is_internal": name in INTERNAL_TOPICS,
            "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

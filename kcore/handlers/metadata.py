"""Metadata (key 3): brokers, controller, and each topic's partitions.

An unknown topic is created when `auto.create.topics.enable` is on and the
request allows it (v4+ field; older versions always allow), as client test
suites assume. Names that could never be a topic get INVALID_TOPIC_EXCEPTION.
"""
from __future__ import annotations

from kcore.controller.local import TopicError, validate_topic_name
from kcore.handlers.topics import auto_create_topic
from kcore.protocol.errors import ErrorCode

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


async def handle(broker, context, request):
    body = request.body
    controller = broker.controller
    if body.topics is None or (request.api_version == 0 and not body.topics):
        names = sorted(controller.topics)
    else:
        names = [t.name for t in body.topics]
    allow_create = broker.config["auto.create.topics.enable"] and (
        request.api_version < 4 or body.allow_auto_topic_creation)
    host, port = broker.config.advertised_address()
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.config.broker_id, "host": host, "port": port, "rack": None}],
        "cluster_id": controller.cluster_id,
        "controller_id": controller.controller_id,
        "topics": [_describe_topic(broker, name, allow_create) for name in names],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _describe_topic(broker, name: str, allow_create: bool) -> dict:
    info = broker.controller.topic(name)
    if info is None:
        try:
            validate_topic_name(name)
        except TopicError:
            return _topic_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
        if not allow_create:
            return _topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            info = auto_create_topic(broker, name)
        except TopicError as exc:
            return _topic_error(name, exc.error_code)
    partitions = []
    for index in range(info.num_partitions):
        partition = broker.replica_manager.get(name, index)
        if partition is None:
            partitions.append({"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": index,
                               "leader_id": -1, "leader_epoch": -1, "replica_nodes": [],
                               "isr_nodes": [], "offline_replicas": []})
            continue
        partitions.append({
            "error_code": ErrorCode.NONE,
            "partition_index": index,
            "leader_id": partition.leader_id,
            "leader_epoch": partition.leader_epoch,
            "replica_nodes": list(partition.replicas),
            "isr_nodes": list(partition.isr),
            "offline_replicas": [],
        })
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "topic_id": info.topic_id,
        "is_internal": info.is_internal,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _topic_error(name: str, code: int) -> dict:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

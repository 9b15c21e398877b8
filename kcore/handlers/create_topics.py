"""CreateTopics (key 19). -1 partitions / replication factor (v4+) take the
broker defaults; explicit assignments must name this broker."""
from __future__ import annotations

from kcore.controller.local import TopicError
from kcore.handlers.topics import create_topic
from kcore.protocol.errors import ErrorCode


async def handle(broker, context, request):
    body = request.body
    results = []
    seen: set[str] = set()
    for topic in body.topics:
        if topic.name in seen:
            results.append(_result(topic.name, ErrorCode.INVALID_REQUEST, "duplicate topic in request"))
            continue
        seen.add(topic.name)
        results.append(_create(broker, topic, body.validate_only))
    return {"throttle_time_ms": 0, "topics": results}


def _create(broker, topic, validate_only: bool) -> dict:
    num_partitions = topic.num_partitions
    replication_factor = topic.replication_factor
    if topic.assignments:
        if num_partitions != -1 or replication_factor != -1:
            return _result(topic.name, ErrorCode.INVALID_REQUEST,
                           "give either assignments or partitions/replication factor")
        brokers = {b for a in topic.assignments for b in a.broker_ids}
        if brokers != {broker.config.broker_id}:
            return _result(topic.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"assignments name brokers {sorted(brokers)}; only "
                           f"{broker.config.broker_id} exists")
        num_partitions = len(topic.assignments)
        replication_factor = 1
    if num_partitions == -1:
        num_partitions = broker.config["num.partitions"]
    if replication_factor == -1:
        replication_factor = broker.config["default.replication.factor"]
    configs = {c.name: c.value for c in topic.configs}
    try:
        create_topic(broker, topic.name, num_partitions, replication_factor, configs, validate_only)
    except TopicError as exc:
        return _result(topic.name, exc.error_code, exc.message)
    return _result(topic.name, ErrorCode.NONE, None)


def _result(name: str, code: int, message: str | None) -> dict:
    return {"name": name, "error_code": code, "error_message": message}

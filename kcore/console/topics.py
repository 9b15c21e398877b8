"""Topics: the list, one topic's partitions and configs, create, delete and
config changes. Changes take the handlers' own paths (kcore.handlers.topics:
the controller decides, this broker learns the result like every other),
so the console behaves exactly as CreateTopics, DeleteTopics and
IncrementalAlterConfigs over the wire."""
from __future__ import annotations

import re
from typing import Any

from kcore.console.base import ApiError, ApiRequest, ConsoleSource, body_object, error_name, int_arg, unknown_topic
from kcore.console.schemas import topic_schemas
from kcore.handlers import configs
from kcore.handlers.topics import create_topic, delete_topic, set_topic_configs, wait_for_leaders
from kcore.metadata import TopicError, TopicInfo
from kcore.protocol.constants import ConfigSource
from kcore.protocol.errors import ErrorCode

# A list answer names at most this many topics (~200 bytes each): a cluster
# with more is browsed by name, and the page stays responsive.
MAX_TOPICS_LISTED = 5000
# Partition rows of one topic's page (~250 bytes each).
MAX_PARTITIONS_LISTED = 10_000
# CreateTopics' own bound on waiting for the new partitions' leaders.
CREATE_TIMEOUT_S = 10.0
# Kafka's topic name rule (Topic.java): legal characters, at most 249.
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_STATUS: dict[int, int] = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 404, ErrorCode.TOPIC_ALREADY_EXISTS: 409,
           ErrorCode.TOPIC_DELETION_DISABLED: 403}


def topic_error(exc: TopicError) -> ApiError:
    return ApiError(_STATUS.get(exc.error_code, 400), error_name(exc.error_code), exc.message)


def _local_size(broker: ConsoleSource, topic: str) -> int:
    return sum(p.log.size_in_bytes for p in broker.replica_manager.topic_partitions(topic))


def list_topics(broker: ConsoleSource, request: ApiRequest) -> dict:
    cache = broker.replica_manager.metadata_cache
    names = cache.topic_names()
    topics = []
    for name in names[:MAX_TOPICS_LISTED]:
        info = broker.controller.topic(name)
        states = cache.partitions(name)
        topics.append({
            "name": name, "partitions": len(states),
            "replication_factor": max((len(s.replicas) for s in states.values()), default=0),
            "internal": bool(info and info.is_internal),
            "under_replicated": sum(len(s.isr) < len(s.replicas) for s in states.values()),
            "size_bytes": _local_size(broker, name),
            "configs": dict(info.configs) if info else {},
            "schemas": topic_schemas(broker, name),
            "rates": broker.history.topic_rates(name)})
    return {"topics": topics, "truncated": len(names) > MAX_TOPICS_LISTED}


def _topic_info(broker: ConsoleSource, name: str) -> TopicInfo:
    info = broker.controller.topic(name)
    if info is None:
        raise unknown_topic(name)
    return info


def describe_topic(broker: ConsoleSource, request: ApiRequest) -> dict:
    name = request.params["topic"]
    info = _topic_info(broker, name)
    cache = broker.replica_manager.metadata_cache
    partitions = []
    states = sorted(cache.partitions(name).items())
    for index, state in states[:MAX_PARTITIONS_LISTED]:
        entry: dict[str, Any] = {"partition": index, "leader": state.leader,
                                 "leader_epoch": state.leader_epoch, "replicas": list(state.replicas),
                                 "isr": list(state.isr), "local": False}
        partition = broker.replica_manager.get(name, index)
        if partition is not None:
            log = partition.log
            entry.update(local=True, log_start_offset=log.log_start_offset,
                         log_end_offset=log.log_end_offset, high_watermark=partition.high_watermark,
                         segments=len(log.segments), size_bytes=log.size_in_bytes)
        partitions.append(entry)
    entries = configs.describe_topic(broker, info, None, include_synonyms=False)
    return {"name": name, "topic_id": str(info.topic_id), "internal": info.is_internal,
            "partitions": partitions, "truncated": len(states) > MAX_PARTITIONS_LISTED,
            "rates": broker.history.topic_rates(name),
            "size_bytes": _local_size(broker, name),
            "table": _table(broker, name),
            "configs": [{"name": e["name"], "value": e["value"],
                         "source": "override" if e["config_source"] == ConfigSource.DYNAMIC_TOPIC_CONFIG else "default"}
                        for e in entries]}


def _table(broker: ConsoleSource, name: str) -> dict | None:
    """The topic's Iceberg table as this broker writes it (docs/tables.md):
    the lag of the partitions it leads, in offsets, and its commits; None
    when it writes none of the topic."""
    stats = broker.tables.stats.get(name)
    if stats is None:
        return None
    return {"name": f"kcore.{name}", "lag": sum(stats.lag.values()),
            "lag_by_partition": {str(p): lag for p, lag in sorted(stats.lag.items())},
            "commits": stats.commits, "records": stats.records, "commit_errors": stats.commit_errors,
            "last_commit_ms": stats.last_commit_wall_ms}


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str | int | float)
                                              and not isinstance(v, bool) for k, v in value.items()):
        raise ApiError(400, "INVALID_REQUEST", f"{what} must be an object of names to values")
    return {k: str(v) for k, v in value.items()}


async def create(broker: ConsoleSource, request: ApiRequest) -> dict:
    body = body_object(request)
    name = body.get("name")
    if not isinstance(name, str) or not _LEGAL_NAME.fullmatch(name) or name in (".", ".."):
        raise ApiError(400, "INVALID_TOPIC_EXCEPTION",
                       f"topic name {name!r} must be 1-249 of a-z A-Z 0-9 . _ -")
    partitions = int_arg(body, "partitions", broker.config["num.partitions"], 1, 100_000)
    replication = int_arg(body, "replication_factor", broker.config["default.replication.factor"], 1, 100)
    assert partitions is not None and replication is not None
    try:
        info = await create_topic(broker, name, partitions, replication,
                                  _string_map(body.get("configs"), "configs"))
    except TopicError as exc:
        raise topic_error(exc) from None
    ready = await wait_for_leaders(broker, name, info.num_partitions, CREATE_TIMEOUT_S)
    return {"name": name, "partitions": info.num_partitions, "leaders_elected": ready}


async def delete(broker: ConsoleSource, request: ApiRequest) -> dict:
    name = request.params["topic"]
    if not broker.config["delete.topic.enable"]:
        raise ApiError(403, "TOPIC_DELETION_DISABLED", "delete.topic.enable is false on this broker")
    try:
        await delete_topic(broker, name)
    except TopicError as exc:
        raise topic_error(exc) from None
    return {"name": name, "deleted": True}


async def alter_configs(broker: ConsoleSource, request: ApiRequest) -> dict:
    """``{"set": {name: value}, "delete": [name]}``: IncrementalAlterConfigs'
    SET and DELETE; keys not named keep their overrides."""
    name = request.params["topic"]
    body = body_object(request)
    updates = _string_map(body.get("set"), "set")
    removed = body.get("delete") or []
    if not isinstance(removed, list) or not all(isinstance(k, str) for k in removed):
        raise ApiError(400, "INVALID_REQUEST", "delete must be a list of config names")
    info = _topic_info(broker, name)
    overrides = dict(info.configs)
    for key in removed:
        overrides.pop(key, None)
    overrides.update(updates)
    try:
        await set_topic_configs(broker, name, overrides, validate_only=False)
    except TopicError as exc:
        raise topic_error(exc) from None
    return {"name": name, "configs": overrides}

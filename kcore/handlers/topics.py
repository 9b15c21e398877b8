"""Topic changes shared by Metadata (auto-create), CreateTopics,
CreatePartitions, DeleteTopics and the config APIs: the controller records
the change, the replica manager opens or removes the logs."""
from __future__ import annotations

from typing import Any

from kcore.controller.local import TopicError, TopicInfo
from kcore.protocol.errors import ErrorCode
from kcore.server.config import ConfigError, parse_topic_configs


def create_topic(broker: Any, name: str, num_partitions: int, replication_factor: int,
                 configs: dict[str, str], validate_only: bool = False) -> TopicInfo:
    """Raises TopicError with Kafka's error code."""
    try:
        overrides = parse_topic_configs(configs)
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    info = broker.controller.create_topic(name, num_partitions, replication_factor,
                                          dict(configs), validate_only)
    if not validate_only:
        broker.replica_manager.ensure_topic(name, info.num_partitions, overrides)
    return info


def auto_create_topic(broker: Any, name: str) -> TopicInfo:
    config = broker.config
    return create_topic(broker, name, config["num.partitions"],
                        config["default.replication.factor"], {})


def topic_overrides(info: TopicInfo) -> dict[str, Any]:
    return parse_topic_configs(info.configs)


def add_partitions(broker: Any, name: str, total: int, validate_only: bool) -> None:
    info = broker.controller.create_partitions(name, total, validate_only)
    if not validate_only:
        broker.replica_manager.ensure_topic(name, info.num_partitions, topic_overrides(info))


def delete_topic(broker: Any, name: str) -> None:
    broker.controller.delete_topic(name)
    broker.replica_manager.delete_topic(name)
    # Committed offsets of a deleted topic go with it (Kafka's
    # handleDeletedPartitions), so a re-created topic starts uncommitted.
    broker.group_coordinator.on_topics_deleted({name})


def set_topic_configs(broker: Any, name: str, configs: dict[str, str],
                      validate_only: bool) -> None:
    """Replace a topic's overrides (AlterConfigs semantics)."""
    info = broker.controller.topic(name)
    if info is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    try:
        overrides = parse_topic_configs(configs)
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if not validate_only:
        broker.controller.set_topic_configs(name, configs)
        broker.replica_manager.update_configs(name, overrides)

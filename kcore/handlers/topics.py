"""Topic changes shared by Metadata (auto-create), CreateTopics,
CreatePartitions, DeleteTopics and the config APIs. Each goes to the
controller only; the broker learns the result like every other broker,
through the controller's LeaderAndIsr / UpdateMetadata / StopReplica, so
the replica manager and metadata cache are never touched here."""
from __future__ import annotations

import asyncio
from typing import Any

from kcore.config import ConfigError, check_combination, parse_topic_configs
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicError, TopicInfo
from kcore.protocol.errors import ErrorCode

# How often a CreateTopics waiting for the new partitions' leaders looks at
# the metadata cache: a cluster controller takes a few ms per change.
LEADER_POLL_S = 0.01


def check_configs(broker: BrokerFacade, configs: dict[str, Any]) -> dict[str, Any]:
    """Each override, then the rules across keys on the topic's effective
    values; INVALID_CONFIG naming the key, as Kafka answers."""
    try:
        parsed = parse_topic_configs(configs)
        check_combination(parsed, broker.dynamic_config.topic_defaults())
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return parsed


async def create_topic(broker: BrokerFacade, name: str, num_partitions: int, replication_factor: int,
                       configs: dict[str, str], assignment: dict[int, list[int]] | None = None,
                       validate_only: bool = False) -> TopicInfo:
    """Raises TopicError with Kafka's error code."""
    check_configs(broker, configs)
    return await broker.controller.create_topic(name, num_partitions, replication_factor,
                                                dict(configs), assignment, validate_only)


async def auto_create_topic(broker: BrokerFacade, name: str) -> TopicInfo:
    config = broker.config
    return await create_topic(broker, name, config["num.partitions"],
                              config["default.replication.factor"], {})


async def wait_for_leaders(broker: BrokerFacade, name: str, num_partitions: int, timeout_s: float) -> bool:
    """Until every partition of the topic has a leader in this broker's
    metadata cache (Kafka answers CreateTopics once its metadata shows the
    topic), or the timeout; returns whether it happened."""
    cache = broker.replica_manager.metadata_cache
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_s, 0)
    while True:
        states = cache.partitions(name)
        if len(states) >= num_partitions and all(s.leader >= 0 for s in states.values()):
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(LEADER_POLL_S)


def topic_overrides(info: TopicInfo) -> dict[str, Any]:
    return parse_topic_configs(info.configs)


async def add_partitions(broker: BrokerFacade, name: str, total: int,
                         assignment: list[list[int]] | None, validate_only: bool) -> TopicInfo:
    return await broker.controller.create_partitions(name, total, assignment, validate_only)


async def delete_topic(broker: BrokerFacade, name: str) -> None:
    await broker.controller.delete_topic(name)


async def set_topic_configs(broker: BrokerFacade, name: str, configs: dict[str, str],
                            validate_only: bool) -> None:
    """Replace a topic's overrides (AlterConfigs semantics)."""
    if broker.controller.topic(name) is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    check_configs(broker, configs)
    if not validate_only:
        await broker.controller.set_topic_configs(name, configs)

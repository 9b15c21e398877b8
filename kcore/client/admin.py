"""Admin operations: topics, partitions, configs, records, cluster description.

Each call sends one request and raises KafkaError for the first resource
that failed, after looking at all of them (its ``context`` names the
resource). CreateTopics, DeleteTopics and CreatePartitions go to the
controller, as Kafka requires, DeleteRecords to each partition's leader
(answering per partition, without raising); the rest go to any broker.

Config sources (DescribeConfigs v1+, Kafka ``ConfigSource``): 1 dynamic
topic, 2 dynamic broker, 3 dynamic default broker, 4 static broker (the
properties file), 5 default, 6 dynamic broker logger. v0 only reports
``is_default``.
"""
from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kcore.client.client import KafkaClient
from kcore.client.connection import BrokerConnection
from kcore.client.errors import KafkaError
from kcore.client.metadata import BrokerMetadata, TopicMetadata
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import ConfigResourceType, ConfigSource
from kcore.protocol.errors import ErrorCode

__all__ = ["Admin", "NewTopic", "ConfigEntry", "ConfigResourceType", "ConfigSource",
           "AlterConfigOp", "ClusterDescription", "elect_leaders_body", "election_results",
           "OngoingReassignment", "alter_reassignments_body", "alter_reassignments_results",
           "list_reassignments_body", "list_reassignments_results"]

DEFAULT_TIMEOUT_MS = 30_000
# A request the broker may hold for its timeout_ms gets this much longer
# on the client's side, so the broker's answer (REQUEST_TIMED_OUT) comes first.
REQUEST_MARGIN_S = 5.0


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs operations (KIP-339)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1          # -1: the broker's num.partitions
    replication_factor: int = -1      # -1: the broker's default.replication.factor
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource      # UNKNOWN from DescribeConfigs v0
    is_default: bool
    read_only: bool = False
    is_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, BrokerMetadata]


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition being moved (ListPartitionReassignments): its full
    replica set while moving, and the replicas being added and removed."""
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


class Admin:
    """Admin calls over a KafkaClient; stateless beyond the client's own state."""

    def __init__(self, client: KafkaClient) -> None:
        self.client = client

    async def create_topics(self, topics: Sequence[NewTopic], *,
                            timeout_ms: int = DEFAULT_TIMEOUT_MS,
                            validate_only: bool = False) -> None:
        connection = await self.client.controller_connection()
        body = await connection.request(ApiKey.CREATE_TOPICS, {
            "topics": [{"name": t.name, "num_partitions": t.num_partitions,
                        "replication_factor": t.replication_factor, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in t.configs.items()]}
                       for t in topics],
            "timeout_ms": timeout_ms, "validate_only": validate_only})
        _raise_first((r.error_code, r.error_message, f"topic {r.name}") for r in body.topics)

    async def delete_topics(self, names: Sequence[str], *,
                            timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        connection = await self.client.controller_connection()
        # Names go in ``topics`` from v6, in ``topic_names`` before.
        body = await connection.request(ApiKey.DELETE_TOPICS, {
            "topics": [{"name": name} for name in names], "topic_names": list(names),
            "timeout_ms": timeout_ms})
        _raise_first((r.error_code, r.error_message, f"topic {r.name}") for r in body.responses)

    async def create_partitions(self, counts: Mapping[str, int], *,
                                timeout_ms: int = DEFAULT_TIMEOUT_MS,
                                validate_only: bool = False) -> None:
        """Grow each topic to the given total partition count."""
        connection = await self.client.controller_connection()
        body = await connection.request(ApiKey.CREATE_PARTITIONS, {
            "topics": [{"name": name, "count": count, "assignments": None}
                       for name, count in counts.items()],
            "timeout_ms": timeout_ms, "validate_only": validate_only})
        _raise_first((r.error_code, r.error_message, f"topic {r.name}") for r in body.results)

    async def list_topics(self, *, include_internal: bool = True) -> list[str]:
        metadata = await self.client.refresh_metadata(None)
        return sorted(name for name, info in metadata.topics.items()
                      if include_internal or not info.is_internal)

    async def describe_topics(self, names: Sequence[str] | None = None) -> list[TopicMetadata]:
        """Partitions, leaders, replicas and ISR of ``names`` (None: every topic)."""
        metadata = await self.client.refresh_metadata(
            None if names is None else list(names), allow_auto_topic_creation=False)
        topics = [metadata.topics[name] for name in (names or sorted(metadata.topics))
                  if name in metadata.topics]
        _raise_first((t.error_code, None, f"topic {t.name}") for t in topics)
        return topics

    async def describe_configs(self, resource_type: ConfigResourceType, names: Sequence[str],
                               keys: Sequence[str] | None = None
                               ) -> dict[str, list[ConfigEntry]]:
        connection = await self._config_connection(resource_type, names)
        version = connection.version_for(ApiKey.DESCRIBE_CONFIGS)
        body = await connection.request(ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": int(resource_type), "resource_name": name,
                           "configuration_keys": None if keys is None else list(keys)}
                          for name in names],
            "include_synonyms": False}, version=version)
        _raise_first((r.error_code, r.error_message, f"resource {r.resource_name}")
                     for r in body.results)
        return {r.resource_name: [_config_entry(c, version) for c in r.configs]
                for r in body.results}

    async def incremental_alter_configs(
            self, resource_type: ConfigResourceType, name: str,
            operations: Iterable[tuple[str, AlterConfigOp, str | None]], *,
            validate_only: bool = False) -> None:
        """Apply (key, operation, value) changes to one resource's configs."""
        connection = await self._config_connection(resource_type, [name])
        body = await connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {
            "resources": [{"resource_type": int(resource_type), "resource_name": name,
                           "configs": [{"name": key, "config_operation": int(op), "value": value}
                                       for key, op, value in operations]}],
            "validate_only": validate_only})
        _raise_first((r.error_code, r.error_message, f"resource {r.resource_name}")
                     for r in body.responses)

    async def _config_connection(self, resource_type: ConfigResourceType,
                                 names: Sequence[str]) -> BrokerConnection:
        """A broker's own configs are served by that broker (as Kafka's
        admin client sends them); anything else by any broker."""
        ids = {name for name in names if resource_type is ConfigResourceType.BROKER and name.isdigit()}
        if len(ids) == 1:
            return await self.client.connection(int(ids.pop()))
        return await self.client.any_connection()

    async def elect_leaders(self, partitions: Sequence[tuple[str, int]] | None, *,
                            unclean: bool = False, timeout_ms: int = DEFAULT_TIMEOUT_MS
                            ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (KIP-460) on the controller: the preferred replica,
        or with ``unclean`` any live replica where no ISR member lives.
        None means every partition. Returns (error code, message) per
        partition: ELECTION_NOT_NEEDED where the wanted leader leads already."""
        connection = await self.client.controller_connection()
        body = await connection.request(ApiKey.ELECT_LEADERS, elect_leaders_body(
            partitions, 1 if unclean else 0, timeout_ms))
        if getattr(body, "error_code", ErrorCode.NONE):
            raise KafkaError(body.error_code, None, "ElectLeaders")
        return election_results(body)

    async def alter_partition_reassignments(
            self, targets: Mapping[tuple[str, int], Sequence[int] | None], *,
            timeout_ms: int = DEFAULT_TIMEOUT_MS, allow_replication_factor_change: bool = True
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """AlterPartitionReassignments (KIP-455) on the controller: move each
        partition to its replicas, or cancel its move (None); with
        ``allow_replication_factor_change`` false (v1, KIP-860) a move that
        changes a partition's replica count is refused. Returns (error
        code, message) per partition; a refused request raises."""
        connection = await self.client.controller_connection()
        body = await connection.request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            alter_reassignments_body(targets.items(), timeout_ms, allow_replication_factor_change),
            version=None if allow_replication_factor_change else 1)
        if body.error_code:
            raise KafkaError(body.error_code, body.error_message, "AlterPartitionReassignments")
        return alter_reassignments_results(body)

    async def list_partition_reassignments(
            self, partitions: Sequence[tuple[str, int]] | None = None, *,
            timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[tuple[str, int], OngoingReassignment]:
        """The moves in progress among ``partitions`` (None: every one)."""
        connection = await self.client.controller_connection()
        body = await connection.request(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                        list_reassignments_body(partitions, timeout_ms))
        if body.error_code:
            raise KafkaError(body.error_code, body.error_message, "ListPartitionReassignments")
        return list_reassignments_results(body)

    async def delete_records(self, offsets: Mapping[tuple[str, int], int], *,
                             timeout_ms: int = DEFAULT_TIMEOUT_MS
                             ) -> dict[tuple[str, int], tuple[int, int]]:
        """DeleteRecords: each partition's log start offset moves to its
        offset (-1: the high watermark), sent to each partition's leader.
        Returns (error code, low watermark) per partition; a partition
        whose leader moved is asked again once, after a metadata refresh,
        as Kafka's admin client does."""
        results: dict[tuple[str, int], tuple[int, int]] = {}
        pending = dict(offsets)
        for attempt in range(2):
            await self.client.refresh_metadata(sorted({topic for topic, _ in pending}))
            by_leader: dict[int, dict[tuple[str, int], int]] = {}
            for key, offset in pending.items():
                leader = self.client.metadata.leader_for(*key)
                if leader < 0:
                    results[key] = (self._missing_code(key), -1)
                else:
                    by_leader.setdefault(leader, {})[key] = offset
            answers = await asyncio.gather(*(self._delete_records_on(leader, wanted, timeout_ms)
                                             for leader, wanted in by_leader.items()))
            pending = {}
            for answer in answers:
                for key, (code, low_watermark) in answer.items():
                    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and attempt == 0:
                        pending[key] = offsets[key]
                    else:
                        results[key] = (code, low_watermark)
            if not pending:
                break
        return {key: results[key] for key in offsets}

    def _missing_code(self, key: tuple[str, int]) -> int:
        info = self.client.metadata.topics.get(key[0])
        if info is None or info.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
                or (info.error_code == ErrorCode.NONE and key[1] not in info.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return info.error_code or ErrorCode.LEADER_NOT_AVAILABLE

    async def _delete_records_on(self, leader: int, offsets: Mapping[tuple[str, int], int],
                                 timeout_ms: int) -> dict[tuple[str, int], tuple[int, int]]:
        connection = await self.client.connection(leader)
        body = await connection.request(ApiKey.DELETE_RECORDS, {
            "topics": [{"name": topic, "partitions": [{"partition_index": index, "offset": offsets[(topic, index)]}
                                                      for index in indexes]}
                       for topic, indexes in _grouped(offsets).items()],
            "timeout_ms": timeout_ms}, timeout_s=timeout_ms / 1000 + REQUEST_MARGIN_S)
        return {(t.name, p.partition_index): (p.error_code, p.low_watermark)
                for t in body.topics for p in t.partitions}

    async def describe_cluster(self) -> ClusterDescription:
        connection = await self.client.any_connection()
        body = await connection.request(ApiKey.DESCRIBE_CLUSTER, {
            "include_cluster_authorized_operations": False})
        if body.error_code:
            raise KafkaError(body.error_code, body.error_message, "DescribeCluster")
        brokers = {b.broker_id: BrokerMetadata(b.broker_id, b.host, b.port, b.rack)
                   for b in body.brokers}
        return ClusterDescription(body.cluster_id, body.controller_id, brokers)


def elect_leaders_body(partitions: Sequence[tuple[str, int]] | None, election_type: int,
                       timeout_ms: int) -> dict:
    """An ElectLeaders request (KIP-460); None partitions means all."""
    topic_partitions = None
    if partitions is not None:
        grouped: dict[str, list[int]] = {}
        for topic, index in partitions:
            grouped.setdefault(topic, []).append(index)
        topic_partitions = [{"topic": t, "partitions": p} for t, p in grouped.items()]
    return {"election_type": election_type, "topic_partitions": topic_partitions,
            "timeout_ms": timeout_ms}


def election_results(body) -> dict[tuple[str, int], tuple[int, str | None]]:
    """(error code, message) per partition of an ElectLeaders response."""
    return {(r.topic, p.partition_id): (p.error_code, p.error_message)
            for r in body.replica_election_results for p in r.partition_result}


def _grouped(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, index in partitions:
        grouped.setdefault(topic, []).append(index)
    return grouped


def alter_reassignments_body(targets: Iterable[tuple[tuple[str, int], Sequence[int] | None]],
                             timeout_ms: int, allow_replication_factor_change: bool = True) -> dict:
    """An AlterPartitionReassignments request; a None target cancels;
    refusing replication factor changes needs version 1 (KIP-860)."""
    topics: dict[str, list[dict]] = {}
    for (topic, index), replicas in targets:
        topics.setdefault(topic, []).append({
            "partition_index": index, "replicas": None if replicas is None else list(replicas)})
    return {"timeout_ms": timeout_ms,
            "allow_replication_factor_change": allow_replication_factor_change,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}


def alter_reassignments_results(body) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {(t.name, p.partition_index): (p.error_code, p.error_message)
            for t in body.responses for p in t.partitions}


def list_reassignments_body(partitions: Iterable[tuple[str, int]] | None, timeout_ms: int) -> dict:
    topics = None if partitions is None else [
        {"name": t, "partition_indexes": p} for t, p in _grouped(partitions).items()]
    return {"timeout_ms": timeout_ms, "topics": topics}


def list_reassignments_results(body) -> dict[tuple[str, int], OngoingReassignment]:
    return {(t.name, p.partition_index): OngoingReassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in body.topics for p in t.partitions}


def _config_entry(config, version: int) -> ConfigEntry:
    if version == 0:
        source, is_default = ConfigSource.UNKNOWN, config.is_default
    else:
        try:
            source = ConfigSource(config.config_source)
        except ValueError:
            source = ConfigSource.UNKNOWN
        is_default = source is ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(config.name, config.value, source, is_default, config.read_only,
                       config.is_sensitive)


def _raise_first(results: Iterable[tuple[int, str | None, str]]) -> None:
    failures = [(code, message, context) for code, message, context in results
                if code != ErrorCode.NONE]
    if failures:
        code, message, context = failures[0]
        raise KafkaError(code, message, context)

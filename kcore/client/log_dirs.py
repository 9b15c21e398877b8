"""Log dir administration: what Kafka's Admin describeLogDirs,
describeReplicaLogDirs and alterReplicaLogDirs do (`kcore log-dirs`,
`kcore reassign-partitions` with ``log_dirs``), on kcore.protocol.

Each call goes to the broker it is about: log dirs are a broker's own.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kcore.client.admin import _grouped
from kcore.client.errors import KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One replica in a log dir: its bytes, its offset lag (a future
    replica's distance to the current one; -1 unknown) and whether it is
    the future copy of a move."""
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    path: str
    error_code: int
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int = -1   # -1: the broker did not say (DescribeLogDirs v0-v3)
    usable_bytes: int = -1


@dataclass(frozen=True, slots=True)
class ReplicaLogDirs:
    """Where a broker holds a partition: its current log dir and, while
    it moves, the dir of its future replica (Kafka's ReplicaLogDirInfo)."""
    current: str | None = None
    future: str | None = None


class LogDirAdmin:
    """DescribeLogDirs and AlterReplicaLogDirs through a KafkaClient.
    Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def describe_log_dirs(self, broker_id: int,
                                partitions: Iterable[TopicPartition] | None = None
                                ) -> dict[str, LogDirDescription]:
        """The broker's log dirs by path, with the replicas among
        ``partitions`` (None: every one) each holds."""
        topics = None if partitions is None else [
            {"topic": t, "partitions": p} for t, p in _grouped(partitions).items()]
        connection = await self.client.connection(broker_id)
        response = await connection.request(ApiKey.DESCRIBE_LOG_DIRS, {"topics": topics})
        if getattr(response, "error_code", ErrorCode.NONE):
            raise KafkaError(response.error_code, None, f"DescribeLogDirs of broker {broker_id}")
        return {result.log_dir: LogDirDescription(
                    result.log_dir, result.error_code,
                    {(topic.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                                  p.is_future_key)
                     for topic in result.topics for p in topic.partitions},
                    result.total_bytes, result.usable_bytes)
                for result in response.results}

    async def describe_replica_log_dirs(self, broker_id: int, partitions: Iterable[TopicPartition]
                                        ) -> dict[TopicPartition, ReplicaLogDirs]:
        """Where ``broker_id`` holds each partition (a partition it holds in
        no online dir is left out)."""
        wanted = list(partitions)
        found: dict[TopicPartition, ReplicaLogDirs] = {}
        for path, description in (await self.describe_log_dirs(broker_id, wanted)).items():
            if description.error_code != ErrorCode.NONE:
                continue
            for key, info in description.replicas.items():
                known = found.get(key, ReplicaLogDirs())
                found[key] = (ReplicaLogDirs(known.current, path) if info.is_future
                              else ReplicaLogDirs(path, known.future))
        return found

    async def alter_replica_log_dirs(self, broker_id: int, moves: Mapping[TopicPartition, str]
                                     ) -> dict[TopicPartition, int]:
        """Ask ``broker_id`` to move each replica to the log dir given (an
        absolute path); Kafka's error code per partition."""
        by_dir: dict[str, dict[str, list[int]]] = {}
        for (topic, index), path in moves.items():
            by_dir.setdefault(path, {}).setdefault(topic, []).append(index)
        connection = await self.client.connection(broker_id)
        response = await connection.request(ApiKey.ALTER_REPLICA_LOG_DIRS, {"dirs": [
            {"path": path, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
            for path, topics in by_dir.items()]})
        return {(topic.topic_name, p.partition_index): p.error_code
                for topic in response.results for p in topic.partitions}

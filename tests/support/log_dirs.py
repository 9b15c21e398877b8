"""DescribeLogDirs and AlterReplicaLogDirs over the wire (WireClient), and
brokers with several log dirs, for the JBOD tests."""
from __future__ import annotations

import time
from pathlib import Path

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.wire import WireClient

DESCRIBE_VERSION = 4  # the first with total_bytes / usable_bytes
ALTER_VERSION = 2


def log_dirs_setting(*paths: Path) -> str:
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)
    return ",".join(str(path) for path in paths)


def describe(client: WireClient, topics: dict[str, list[int]] | None = None,
             version: int = DESCRIBE_VERSION):
    body = {"topics": None if topics is None else [
        {"topic": topic, "partitions": partitions} for topic, partitions in topics.items()]}
    return client.request(ApiKey.DESCRIBE_LOG_DIRS, version, body)


def placement(client: WireClient) -> dict[tuple[str, int, bool], str]:
    """(topic, partition, is_future) -> the log dir holding it."""
    answer = describe(client)
    assert answer.error_code == ErrorCode.NONE
    return {(topic.name, p.partition_index, p.is_future_key): result.log_dir
            for result in answer.results for topic in result.topics for p in topic.partitions}


def alter(client: WireClient, moves: dict[tuple[str, int], str],
          version: int = ALTER_VERSION) -> dict[tuple[str, int], int]:
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, index), path in moves.items():
        by_dir.setdefault(path, {}).setdefault(topic, []).append(index)
    answer = client.request(ApiKey.ALTER_REPLICA_LOG_DIRS, version, {"dirs": [
        {"path": path, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
        for path, topics in by_dir.items()]})
    return {(t.topic_name, p.partition_index): p.error_code
            for t in answer.results for p in t.partitions}


def wait_for_move(client: WireClient, topic: str, index: int, target: Path,
                  timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        where = placement(client)
        if where.get((topic, index, False)) == str(target) and (topic, index, True) not in where:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}-{index} did not move to {target}: {where}")
        time.sleep(0.05)

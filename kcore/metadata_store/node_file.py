"""A node's cluster metadata file, shared by its supervisor and its broker
processes when ``num.processes`` > 1 (without ZooKeeper).

``<first log dir>/__cluster_metadata.json`` is the node's ZooKeeper: broker
processes write topic changes into it (as Kafka's brokers write
``/brokers/topics/T`` from any broker) and the supervisor, the node's
controller, reacts to them (kcore/controller/node.py). Every change holds an exclusive
``flock`` on ``__cluster_metadata.lock`` for its read-modify-write and
replaces the file atomically (temp file, fsync, rename), so readers see a
whole old or a whole new state and two writers never lose each other's
change. It is the same file (a superset of the format) a single broker's
LocalController keeps.

Format::

    {"controller_epoch": 3,
     "processes": [{"broker_id": 0, "host": "127.0.0.1", "port": 9092}, ...],
     "topics": [{"name": "t", "topic_id": "<uuid>", "num_partitions": 2,
                 "replication_factor": 1, "configs": {...},
                 "leader_epochs": [4, 4], "assignment": {"0": [0], "1": [1]}}],
     "deleting": ["old-topic"],
     "acls": [{"resource_type": "TOPIC", "resource_name": "t", "pattern_type": "LITERAL",
               "principal": "User:alice", "host": "*", "operation": "READ",
               "permission": "ALLOW"}],
     "client_quotas": [{"entity": {"user": "alice", "client-id": null},
                        "values": {"producer_byte_rate": 1048576.0}}],
     "broker_configs": {"<default>": {"leader.replication.throttled.rate": "1000000"}}}

A topic without ``topic_id`` (a file written before topic ids) reads as
``NO_TOPIC_ID``; the node's controller gives it one and writes it back
(``assign_topic_ids``).

Not thread-safe within a process; safe between processes (flock).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kcore.metadata import NO_TOPIC_ID, BrokerInfo, TopicInfo

METADATA_FILE = "__cluster_metadata.json"
LOCK_FILE = "__cluster_metadata.lock"


@dataclass
class NodeState:
    controller_epoch: int = 0
    processes: list[BrokerInfo] = field(default_factory=list)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    leader_epochs: dict[str, list[int]] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    # kcore.security's state, kept as JSON: ACL bindings and client quotas.
    acls: list[dict] = field(default_factory=list)
    client_quotas: list[dict] = field(default_factory=list)
    # Dynamic broker configs (kcore/dynamic_config.py): "<id>" or "<default>" -> key -> value.
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)


class NodeStore:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / METADATA_FILE

    def version(self) -> tuple[int, int]:
        """(mtime_ns, inode): changes with every write (rename = new inode)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return 0, 0
        return stat.st_mtime_ns, stat.st_ino

    def read(self) -> NodeState:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return NodeState()
        return _decode(data)

    @contextlib.contextmanager
    def updating(self) -> Iterator[NodeState]:
        """Lock, read, let the caller change the state, write it back
        (nothing is written if the block raises)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = self.read()
            yield state
            self._write(state)
        finally:
            os.close(fd)  # releases the lock

    def _write(self, state: NodeState) -> None:
        atomic_write(self.path, json.dumps(_encode(state), indent=1))


def assign_topic_ids(state: NodeState) -> list[str]:
    """Give every topic that has none a new id (KIP-516, once, as Kafka's
    controller does on upgrade); the names of those given one."""
    named = []
    for name, info in state.topics.items():
        if info.topic_id == NO_TOPIC_ID:
            info.topic_id = uuid.uuid4()
            named.append(name)
    return named


def atomic_write(path: Path, text: str) -> None:
    """Write to a temp file, fsync, rename over ``path``, fsync the directory:
    a crash leaves the old or the new file, never half of one."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _encode(state: NodeState) -> dict:
    return {
        "controller_epoch": state.controller_epoch,
        "processes": [{"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                      for b in state.processes],
        "topics": [{"name": t.name, "topic_id": str(t.topic_id), "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor, "configs": t.configs,
                    "leader_epochs": state.leader_epochs.get(t.name, []),
                    "assignment": {str(p): r for p, r in sorted(t.assignment.items())}}
                   for t in state.topics.values()],
        "deleting": sorted(state.deleting),
        "acls": state.acls,
        "client_quotas": state.client_quotas,
        "broker_configs": state.broker_configs,
    }


def _decode(data: dict) -> NodeState:
    state = NodeState(controller_epoch=data.get("controller_epoch", 0))
    state.processes = [BrokerInfo(p["broker_id"], p["host"], p["port"], p.get("rack"))
                       for p in data.get("processes", [])]
    for item in data.get("topics", []):
        name, count = item["name"], item["num_partitions"]
        assignment = {int(p): list(r) for p, r in item.get("assignment", {}).items()}
        topic_id = uuid.UUID(item["topic_id"]) if item.get("topic_id") else NO_TOPIC_ID
        state.topics[name] = TopicInfo(name, topic_id, count,
                                       item.get("replication_factor", 1),
                                       item.get("configs", {}), assignment)
        epochs = item.get("leader_epochs", [])
        state.leader_epochs[name] = (epochs + [0] * count)[:count]
    state.deleting = set(data.get("deleting", []))
    state.acls = list(data.get("acls", []))
    state.client_quotas = list(data.get("client_quotas", []))
    state.broker_configs = {str(entity): {str(k): str(v) for k, v in values.items()}
                            for entity, values in data.get("broker_configs", {}).items()}
    return state

"""Single-node cluster metadata: topics, partition counts, topic configs.

Kept in `<first log dir>/__cluster_metadata.json` (written to a temp file,
fsynced, renamed, so a crash leaves the old or the new file, never half of
one) next to Kafka's `meta.properties` (cluster.id, broker.id). A cluster
replaces this with the ZooKeeper controller; both expose the same methods.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import base64
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

METADATA_FILE = "__cluster_metadata.json"
META_PROPERTIES = "meta.properties"
# Kafka's Topic.validate: legal characters and 249 = 255 minus room for
# "-<partition>" and the ".deleted"-style suffixes in directory names.
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class TopicError(Exception):
    """A topic operation failed; `error_code` is Kafka's code for it."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code
        self.message = message


# Kafka error codes used here (protocol/errors.py has the full enum; the
# controller sits below protocol's users and keeps just these numbers).
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
UNKNOWN_TOPIC_OR_PARTITION = 3


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise TopicError(INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME:
        raise TopicError(INVALID_TOPIC_EXCEPTION,
                         f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not TOPIC_NAME.match(name):
        raise TopicError(INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


class LocalController:
    """Cluster metadata of a single broker (see module doc)."""

    def __init__(self, data_dir: Path, broker_id: int):
        self._dir = Path(data_dir)
        self.broker_id = broker_id
        self.controller_id = broker_id
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id = ""
        self._load()

    # -- queries -----------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info
        return None

    def leader_of(self, topic: str, partition: int) -> int:
        return self.broker_id

    # -- changes -----------------------------------------------------------
    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     configs: dict[str, str], validate_only: bool = False) -> TopicInfo:
        validate_topic_name(name)
        if name in self.topics:
            raise TopicError(TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if num_partitions < 1:
            raise TopicError(INVALID_PARTITIONS, "number of partitions must be larger than 0")
        if replication_factor != 1:
            raise TopicError(INVALID_REPLICATION_FACTOR,
                             f"replication factor {replication_factor} is larger than "
                             "the 1 available broker")
        info = TopicInfo(name, uuid.uuid4(), num_partitions, replication_factor, dict(configs))
        if not validate_only:
            self.topics[name] = info
            self._save()
        return info

    def delete_topic(self, name: str) -> TopicInfo:
        info = self.topics.pop(name, None)
        if info is None:
            raise TopicError(UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        self._save()
        return info

    def create_partitions(self, name: str, total: int, validate_only: bool = False) -> TopicInfo:
        info = self.topics.get(name)
        if info is None:
            raise TopicError(UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        if total <= info.num_partitions:
            raise TopicError(INVALID_PARTITIONS,
                             f"topic {name!r} has {info.num_partitions} partitions; "
                             f"the new count must be larger, got {total}")
        if not validate_only:
            info.num_partitions = total
            self._save()
        return info

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics[name].configs = dict(configs)
        self._save()

    # -- persistence -------------------------------------------------------
    def _load(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        path = self._dir / METADATA_FILE
        if not path.exists():
            return
        state = json.loads(path.read_text())
        for item in state["topics"]:
            self.topics[item["name"]] = TopicInfo(
                item["name"], uuid.UUID(item["topic_id"]), item["num_partitions"],
                item.get("replication_factor", 1), item.get("configs", {}))

    def _load_meta_properties(self) -> str:
        path = self._dir / META_PROPERTIES
        if path.exists():
            values = dict(line.split("=", 1) for line in path.read_text().splitlines()
                          if "=" in line and not line.startswith("#"))
            stored_id = int(values.get("broker.id", self.broker_id))
            if stored_id != self.broker_id:
                raise ValueError(
                    f"{path} belongs to broker.id={stored_id}, but this broker is "
                    f"broker.id={self.broker_id}")
            return values["cluster.id"]
        # Kafka's cluster ids are 16 random bytes in url-safe base64 (22 chars).
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        _atomic_write(path, f"#kcore\nversion=0\nbroker.id={self.broker_id}\n"
                            f"cluster.id={cluster_id}\n")
        return cluster_id

    def _save(self) -> None:
        state = {"topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "num_partitions": t.num_partitions,
             "replication_factor": t.replication_factor, "configs": t.configs}
            for t in self.topics.values()]}
        _atomic_write(self._dir / METADATA_FILE, json.dumps(state, indent=1))


def _atomic_write(path: Path, text: str) -> None:
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

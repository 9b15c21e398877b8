"""Per-partition log configuration: Kafka's topic-level configs.

Attribute names are the snake_case of Kafka's topic config keys
(``segment.bytes`` -> ``segment_bytes``); defaults are Kafka's
(``TopicConfig`` / ``LogConfig``). Broker-level ``log.*`` settings reach a
topic as its defaults: the broker resolves them into a dict of topic keys
and passes it to ``from_topic_configs``.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kcore.protocol.constants import INT64_MAX

DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Immutable; a config change makes a new LogConfig (``Log.config = ...``)."""

    segment_bytes: int = 1 << 30            # 1 GiB; positions are int32
    segment_ms: int = 7 * DAY_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 << 20     # 10 MiB per index file
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * DAY_MS          # -1: keep forever
    retention_bytes: int = -1               # -1: no size limit
    max_message_bytes: int = 1048588        # 1 MiB + record batch overhead
    cleanup_policy: str = "delete"
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = INT64_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000
    flush_messages: int = INT64_MAX
    flush_ms: int = INT64_MAX
    message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    preallocate: bool = False
    unclean_leader_election_enable: bool = False

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, Any] | None = None,
                           defaults: Mapping[str, Any] | LogConfig | None = None) -> LogConfig:
        """Build from Kafka topic keys (``{"retention.ms": 1000}``); values may
        be typed or strings as in a properties file. ``defaults`` (topic keys
        or a LogConfig) fill what ``configs`` leaves out. Keys that do not
        configure the log are ignored; a None value means "not set"."""
        base = defaults if isinstance(defaults, LogConfig) else cls()
        values: dict[str, Any] = {}
        if defaults is not None and not isinstance(defaults, LogConfig):
            values.update(_parse(defaults))
        values.update(_parse(configs or {}))
        return dataclasses.replace(base, **values)

    def to_topic_configs(self) -> dict[str, Any]:
        """This config as Kafka topic keys."""
        return {field.name.replace("_", "."): getattr(self, field.name)
                for field in dataclasses.fields(self)}

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, or max.compaction.lag.ms when shorter on a compacted
        topic: the active segment is never cleaned, so it must roll for its
        records to be compacted within the lag (Kafka ``LogConfig.maxSegmentMs``)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self) -> int:
        """A new segment's roll jitter: random in [0, min(segment.jitter.ms,
        segment.ms)), so segments created together do not all roll at once
        (Kafka ``LogConfig.randomSegmentJitter``)."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")


_FIELDS = {field.name: field for field in dataclasses.fields(LogConfig)}


def _convert(name: str, value: Any) -> Any:
    kind = _FIELDS[name].type
    if kind == "bool":
        if isinstance(value, str):
            if value.strip().lower() not in ("true", "false"):
                raise ValueError(f"{name.replace('_', '.')}: expected true or false, got {value!r}")
            return value.strip().lower() == "true"
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value)
    return str(value).strip()


def _parse(configs: Mapping[str, Any]) -> dict[str, Any]:
    values = {}
    for key, value in configs.items():
        name = key.replace(".", "_")
        if name in _FIELDS and value is not None:
            values[name] = _convert(name, value)
    return values

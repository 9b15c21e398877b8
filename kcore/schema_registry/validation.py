"""Validation on produce: which schema ids a topic's records may carry.

A topic turns it on with Confluent Server's ``confluent.value.schema.
validation`` / ``confluent.key.schema.validation`` or Redpanda's
``redpanda.value.schema.id.validation`` / ``...key...``; the partition then
asks ``checks(topic, configs)`` for a (key, value) pair of checks and the
log's record rules (log/log_validator.py, rule 4) refuse a batch holding a
record whose value (key) carries no id, or one the check does not allow,
with INVALID_RECORD naming the record (KIP-467).

The subject name strategy (``confluent.value.subject.name.strategy``,
Redpanda's ``redpanda.value.subject.name.strategy`` when only Redpanda's
switch is on) says where an id must be registered, as a live version:

- TopicNameStrategy (the default): under ``<topic>-value`` (``-key``);
- RecordNameStrategy: under the subject named after the schema's record
  (the Avro full name, the first Protobuf message, the JSON Schema title);
- TopicRecordNameStrategy: under ``<topic>-<record name>``.

The answers come from this broker's registry as replayed (store.py), and
are cached until it changes (``generation``), so a produce costs a dict
lookup and, per distinct id in the batch (usually one), a set lookup. An
id the registry does not know makes the store fetch at once: a schema just
registered through another broker is then known for the producer's retry.

Not thread-safe: the broker's event loop owns it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcore.log.log_validator import SchemaIdCheck
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.registry import SchemaRegistry
from kcore.schema_registry.state import RegistryState

STRATEGY_PREFIX = "io.confluent.kafka.serializers.subject."
# Cached checks at most, a few per topic with validation on.
MAX_CACHED_CHECKS = 10_000


class TopicSubjectIds:
    """TopicNameStrategy: the live ids of one subject."""

    def __init__(self, state: RegistryState, subject: str):
        self.subject = f"subject '{subject}'"
        self.ids = frozenset(state.ids_of_subject(subject))

    def allows(self, schema_id: int) -> bool:
        return schema_id in self.ids


class RecordSubjectIds:
    """RecordNameStrategy (``topic`` None) and TopicRecordNameStrategy: an
    id is allowed when the subject named after its schema's record holds it."""

    def __init__(self, state: RegistryState, registry: SchemaRegistry, topic: str | None):
        self.state = state
        self.registry = registry
        self.topic = topic
        self.subject = ("the subject of its record name (RecordNameStrategy)" if topic is None
                        else f"subject '{topic}-<record name>' (TopicRecordNameStrategy)")
        self._answers: dict[int, bool] = {}

    def allows(self, schema_id: int) -> bool:
        answer = self._answers.get(schema_id)
        if answer is None:
            answer = self._decide(schema_id)
            self._answers[schema_id] = answer
        return answer

    def _decide(self, schema_id: int) -> bool:
        record = self.state.schema_by_id(schema_id)
        if record is None:
            return False
        try:
            name = self.registry.parse_record(record).record_name()
        except RegistryError:
            return False
        if name is None:
            return False
        subject = name if self.topic is None else f"{self.topic}-{name}"
        return schema_id in set(self.state.ids_of_subject(subject))


class SchemaValidation:
    def __init__(self, registry: SchemaRegistry, on_unknown: Callable[[], None]):
        self.registry = registry
        self.on_unknown = on_unknown
        self._cache: dict[tuple[str, str, str], SchemaIdCheck] = {}
        self._cached_for: tuple[int, int] = (0, -1)  # (id of the state, its generation)
        self._by_topic: dict[str, tuple[tuple[int, int], Mapping[str, Any], tuple]] = {}

    def checks(self, topic: str, configs: Mapping[str, Any]) -> tuple[SchemaIdCheck | None, SchemaIdCheck | None]:
        """The topic's (key, value) checks; the same objects while neither
        the registry nor the topic's configs change (the partition keeps its
        record rules while they are)."""
        state = self.registry.state
        marker = (id(state), state.generation)
        known = self._by_topic.get(topic)
        if known is not None and known[0] == marker and known[1] is configs:
            return known[2]
        found = self._check(topic, configs, "key"), self._check(topic, configs, "value")
        if len(self._by_topic) > MAX_CACHED_CHECKS:
            self._by_topic.clear()
        self._by_topic[topic] = (marker, configs, found)
        return found

    def _check(self, topic: str, configs: Mapping[str, Any], part: str) -> SchemaIdCheck | None:
        if configs.get(f"confluent.{part}.schema.validation"):
            strategy = configs.get(f"confluent.{part}.subject.name.strategy") or "TopicNameStrategy"
        elif configs.get(f"redpanda.{part}.schema.id.validation"):
            strategy = configs.get(f"redpanda.{part}.subject.name.strategy") or "TopicNameStrategy"
        else:
            return None
        state = self.registry.state
        if self._cached_for != (id(state), state.generation) or len(self._cache) > MAX_CACHED_CHECKS:
            self._cache.clear()
            self._cached_for = (id(state), state.generation)
        strategy = str(strategy).removeprefix(STRATEGY_PREFIX)
        key = (topic, part, strategy)
        check = self._cache.get(key)
        if check is None:
            check = _Reporting(self._new_check(state, topic, part, strategy), self.on_unknown)
            self._cache[key] = check
        return check

    def _new_check(self, state: RegistryState, topic: str, part: str, strategy: str) -> SchemaIdCheck:
        if strategy == "RecordNameStrategy":
            return RecordSubjectIds(state, self.registry, None)
        if strategy == "TopicRecordNameStrategy":
            return RecordSubjectIds(state, self.registry, topic)
        return TopicSubjectIds(state, f"{topic}-{part}")


class _Reporting:
    """A check that, when it refuses an id, has the store look for news."""

    def __init__(self, check: SchemaIdCheck, on_unknown: Callable[[], None]):
        self.check = check
        self.subject = check.subject
        self.on_unknown = on_unknown

    def allows(self, schema_id: int) -> bool:
        if self.check.allows(schema_id):
            return True
        self.on_unknown()
        return False

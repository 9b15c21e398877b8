"""Broker configs that change at runtime: Kafka's DynamicBrokerConfig (ZK mode).

A dynamic value is set for one broker (resource name ``"<id>"``) or for
every broker (resource name ``""``, stored as ``<default>``), and stored
beside the cluster metadata (ZooKeeper ``/config/brokers/<id>`` and
``/config/brokers/<default>``, or a single node's metadata file). The value
a broker uses is, first found: its own dynamic value
(DYNAMIC_BROKER_CONFIG), the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG),
server.properties (STATIC_BROKER_CONFIG), the built-in default.

Of the keys kcore defines, only ``DYNAMIC_KEYS`` may change: the
replication throttle rates, read on each use, and a few broker synonyms of
topic configs (``TOPIC_DEFAULT_KEYS``, Kafka's DynamicLogConfig): a change
re-derives the default of every topic key they stand for and re-applies
the config of every partition without an override of its own, as a topic
config change does. Kafka can reconfigure more (listeners, SSL stores,
thread pools); kcore refuses every other key it defines as Kafka refuses a
read-only key: INVALID_CONFIG, "Cannot update these configs dynamically".
A name kcore does not define (a plugin's or a tool's own key) is stored
as written and described back, as Kafka keeps custom configs; nothing in
kcore reads it.

Layer: beside kcore/config.py; data and pure functions, no I/O.
Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcore.config import BROKER_KEYS, BrokerConfig
from kcore.protocol.constants import ConfigSource

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
THROTTLE_KEYS = frozenset({LEADER_RATE, FOLLOWER_RATE})
TOPIC_DEFAULT_KEYS = frozenset({
    "log.retention.ms", "log.retention.bytes", "log.segment.bytes", "log.roll.ms",
    "message.max.bytes", "min.insync.replicas", "compression.type", "log.cleanup.policy"})
DYNAMIC_KEYS = THROTTLE_KEYS | TOPIC_DEFAULT_KEYS
DEFAULT_ENTITY = "<default>"

BrokerConfigs = dict[str, dict[str, str]]  # entity ("<id>" or "<default>") -> key -> value


class DynamicConfigError(ValueError):
    """A change Kafka refuses: INVALID_CONFIG with this message."""


def is_custom(name: str) -> bool:
    """A key kcore does not define: kept as written, never interpreted."""
    return name not in BROKER_KEYS


def storable(name: str) -> bool:
    return name in DYNAMIC_KEYS or is_custom(name)


def validate(changes: Mapping[str, str | None]) -> None:
    """Every defined key dynamic, every value of one parseable (None
    deletes the key); custom keys pass as they are."""
    fixed = sorted(name for name in changes if not storable(name))
    if fixed:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {', '.join(fixed)} "
                                 f"(dynamic keys: {', '.join(sorted(DYNAMIC_KEYS))})")
    for name, text in changes.items():
        if text is not None and not is_custom(name):
            parse(name, text)


def parse(name: str, text: str) -> Any:
    try:
        return BROKER_KEYS[name].parse(text)
    except (ValueError, TypeError) as exc:
        raise DynamicConfigError(f"invalid value {text!r} for configuration {name}: {exc}") from None


def apply_change(configs: BrokerConfigs, entity: str, changes: Mapping[str, str | None]) -> None:
    """Set each key of ``entity`` to its value; None removes it."""
    current = dict(configs.get(entity, {}))
    for name, value in changes.items():
        if value is None:
            current.pop(name, None)
        else:
            current[name] = value
    if current:
        configs[entity] = current
    else:
        configs.pop(entity, None)


class DynamicBrokerConfig:
    """This broker's view: the static config under the stored dynamic values."""

    def __init__(self, static: BrokerConfig):
        self.static = static
        self.entity = str(static.broker_id)
        self.configs: BrokerConfigs = {}
        self.listeners: list[Callable[[], None]] = []

    def replace(self, configs: BrokerConfigs) -> None:
        """Install the stored values (every entity); listeners hear of a change."""
        cleaned = {entity: {k: v for k, v in values.items() if storable(k)}
                   for entity, values in configs.items()}
        if cleaned == self.configs:
            return
        self.configs = cleaned
        for listener in self.listeners:
            listener()

    def __getitem__(self, name: str) -> Any:
        for entity in (self.entity, DEFAULT_ENTITY):
            text = self.configs.get(entity, {}).get(name)
            if text is not None:
                try:
                    return parse(name, text)
                except DynamicConfigError:
                    pass  # written by another tool: the static value stands
        return self.static[name]

    def custom(self, entity: str) -> dict[str, str]:
        """The custom keys stored for ``entity`` ("<id>" or "<default>")."""
        return {k: v for k, v in self.configs.get(entity, {}).items() if is_custom(k)}

    def topic_defaults(self) -> dict[str, Any]:
        """Every topic key's default with the dynamic synonyms applied."""
        return self.static.topic_defaults({name: self[name] for name in TOPIC_DEFAULT_KEYS
                                           if self.dynamic_synonyms(name)})

    def dynamic_synonyms(self, name: str) -> list[tuple[str, ConfigSource]]:
        """(value, source) of the dynamic values set for ``name``, first wins."""
        found = []
        for entity, source in ((self.entity, ConfigSource.DYNAMIC_BROKER_CONFIG),
                               (DEFAULT_ENTITY, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
            text = self.configs.get(entity, {}).get(name)
            if text is not None:
                found.append((text, source))
        return found



"""Config resources shared by DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs: topic configs (type 2) and broker configs (type 4).

Topic values come from the topic's override, else the broker's synonym
(`log.retention.ms` for `retention.ms`), else Kafka's default; every key is
listed (PROTOCOL.md section 4: clients expect the full set with sources).
Broker configs are static (read from server.properties at start)."""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kcore.config import BROKER_KEYS, TOPIC_KEYS
from kcore.controller.metadata import TopicInfo
from kcore.handlers.base import BrokerFacade

TOPIC = 2
BROKER = 4

# DescribeConfigs ConfigSource values (Kafka's DescribeConfigsResponse).
TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def render(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def describe_topic(broker: BrokerFacade, info: TopicInfo, keys: Collection[str] | None,
                   include_synonyms: bool) -> list[dict]:
    defaults = broker.config.topic_defaults()
    entries = []
    for name in sorted(TOPIC_KEYS):
        if keys is not None and name not in keys:
            continue
        synonym = TOPIC_KEYS[name][1]
        synonyms: list[dict] = []
        value: str | None
        if name in info.configs:
            value, source = info.configs[name], TOPIC_CONFIG
            synonyms.append({"name": name, "value": value, "source": TOPIC_CONFIG})
        else:
            value = render(defaults[name])
            source = (STATIC_BROKER_CONFIG if synonym and not broker.config.is_default(synonym)
                      else DEFAULT_CONFIG)
        if synonym:
            synonyms.append({"name": synonym, "value": render(broker.config[synonym]),
                             "source": STATIC_BROKER_CONFIG if not broker.config.is_default(synonym)
                             else DEFAULT_CONFIG})
        entries.append(_entry(name, value, False, source, synonyms if include_synonyms else []))
    return entries


def describe_broker(broker: BrokerFacade, keys: Collection[str] | None, include_synonyms: bool) -> list[dict]:
    entries = []
    for name in sorted(BROKER_KEYS):
        if keys is not None and name not in keys:
            continue
        source = DEFAULT_CONFIG if broker.config.is_default(name) else STATIC_BROKER_CONFIG
        value = render(broker.config[name])
        synonyms = [{"name": name, "value": value, "source": source}] if include_synonyms else []
        entries.append(_entry(name, value, True, source, synonyms))
    return entries


def _entry(name, value, read_only, source, synonyms) -> dict:
    return {"name": name, "value": value, "read_only": read_only,
            "is_default": source == DEFAULT_CONFIG, "config_source": source,
            "is_sensitive": False, "synonyms": synonyms}

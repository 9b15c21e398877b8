"""Config resources shared by DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs: topic configs (type 2) and broker configs (type 4).

Every key is listed (clients expect the full set:
docs/protocol.md#what-clients-rely-on),
built as Kafka 3.9's ``ConfigHelper`` builds it:

* value: a topic's override, else its default from the broker synonyms
  (kcore/topic_config.py); a broker key's value as configured;
* synonyms, in Kafka's order: the topic override (DYNAMIC_TOPIC_CONFIG), the
  broker's own dynamic value (DYNAMIC_BROKER_CONFIG), the cluster default
  (DYNAMIC_DEFAULT_BROKER_CONFIG), then the
  broker synonyms set in server.properties (STATIC_BROKER_CONFIG), then
  those with a default (DEFAULT_CONFIG), dropping every entry before the
  first one of the primary synonym (so ``retention.ms`` lists none unless
  ``log.retention.ms`` itself is set or has a default, as in Kafka);
* config_source: the first synonym's source, DEFAULT_CONFIG when none;
  is_default (v0): the source is DEFAULT_CONFIG;
* read_only: false for topic configs and dynamic broker keys
  (kcore/dynamic_config.py), true for the other broker configs;
* the resource name "" (the cluster default) lists only the dynamic
  defaults set, as Kafka's;
* custom keys (names kcore does not define, kept dynamically) follow the
  defined ones, with their dynamic sources and the UNKNOWN type;
* config_type (v3+): Kafka's type of a topic key; a broker key shares the
  type of the topic key it stands for with the same unit, else UNKNOWN (0);
* documentation (v3+, when asked): the key's doc, saying what kcore does.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kcore.config import BROKER_KEYS, SENSITIVE_KEYS, TOPIC_KEYS, BrokerConfig
from kcore.config_def import ConfigType
from kcore.dynamic_config import DEFAULT_ENTITY, DYNAMIC_KEYS, DynamicBrokerConfig
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicInfo
from kcore.protocol.constants import ConfigSource

# DescribeConfigs v3+ config_type of a key kcore knows no type of (ConfigType.UNKNOWN).
UNKNOWN_TYPE = 0

# DynamicBrokerConfig.brokerConfigSynonyms: the broker keys read as one.
BROKER_SYNONYMS = [
    ["log.roll.ms", "log.roll.hours"],
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
]
# Broker key -> the topic key it stands for in the same unit.
_TOPIC_KEY_OF = {synonym.name: key for key in TOPIC_KEYS.values() for synonym in key.synonyms
                 if synonym.unit == 1}

render = ConfigType.render


def describe_topic(broker: BrokerFacade, info: TopicInfo, keys: Collection[str] | None,
                   include_synonyms: bool, include_documentation: bool = False) -> list[dict]:
    defaults = broker.dynamic_config.topic_defaults()
    entries = []
    for name in sorted(TOPIC_KEYS):
        if keys is not None and name not in keys:
            continue
        key = TOPIC_KEYS[name]
        synonyms = (_synonyms(broker.config, key.synonyms[0].name, broker.dynamic_config)
                    if key.synonyms else [])
        if name in info.configs:
            value = render(key.type.parse(info.configs[name]))
            synonyms.insert(0, _synonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        else:
            value = render(defaults[name])
        entries.append(_entry(name, value, False, synonyms, include_synonyms, key.type.value,
                              key.doc if include_documentation else None))
    return entries


def describe_broker(broker: BrokerFacade, keys: Collection[str] | None, include_synonyms: bool,
                    include_documentation: bool = False) -> list[dict]:
    entries = []
    for name in sorted(BROKER_KEYS):
        if keys is not None and name not in keys:
            continue
        synonyms = _synonyms(broker.config, name, broker.dynamic_config)
        value = (synonyms[0]["value"] if synonyms and synonyms[0]["source"] != ConfigSource.DEFAULT_CONFIG
                 else render(broker.config[name]))
        entries.append(_entry(name, value, name not in DYNAMIC_KEYS, synonyms, include_synonyms,
                              _broker_type(name), BROKER_KEYS[name].doc if include_documentation else None))
    return entries + _custom_entries(broker, keys, include_synonyms)


def _custom_entries(broker: BrokerFacade, keys: Collection[str] | None,
                    include_synonyms: bool) -> list[dict]:
    """Keys kcore does not define, stored dynamically: this broker's value
    first, then the cluster default's, as Kafka lists custom configs."""
    dynamic = broker.dynamic_config
    own, default = dynamic.custom(dynamic.entity), dynamic.custom(DEFAULT_ENTITY)
    entries = []
    for name in sorted(own.keys() | default.keys()):
        if keys is not None and name not in keys:
            continue
        synonyms = [_synonym(name, values[name], source) for values, source in (
            (own, ConfigSource.DYNAMIC_BROKER_CONFIG), (default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
            if name in values]
        entries.append(_entry(name, synonyms[0]["value"], False, synonyms, include_synonyms,
                              _broker_type(name), None))
    return entries


def describe_broker_default(broker: BrokerFacade, keys: Collection[str] | None,
                            include_synonyms: bool, include_documentation: bool = False) -> list[dict]:
    """The cluster-wide dynamic defaults set (resource name "")."""
    values = broker.dynamic_config.configs.get(DEFAULT_ENTITY, {})
    return [_entry(name, values[name], False,
                   [_synonym(name, values[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)], include_synonyms,
                   _broker_type(name),
                   BROKER_KEYS[name].doc if include_documentation and name in BROKER_KEYS else None)
            for name in sorted(values) if keys is None or name in keys]


def _broker_type(name: str) -> int:
    topic_key = _TOPIC_KEY_OF.get(name)
    return topic_key.type.value if topic_key else UNKNOWN_TYPE


def _synonyms(config: BrokerConfig, primary: str, dynamic: DynamicBrokerConfig | None = None) -> list[dict]:
    """Kafka ``ConfigHelper.configSynonyms`` for a broker key."""
    names = next((group for group in BROKER_SYNONYMS if primary in group), [primary])
    found = [_synonym(n, value, source) for n in names if dynamic is not None
             for value, source in dynamic.dynamic_synonyms(n)]
    found += [_synonym(n, config.originals[n], ConfigSource.STATIC_BROKER_CONFIG)
              for n in names if n in config.originals]
    found += [_synonym(n, render(BROKER_KEYS[n].default), ConfigSource.DEFAULT_CONFIG)
              for n in names if n in BROKER_KEYS and BROKER_KEYS[n].default is not None]
    while found and found[0]["name"] != primary:
        found.pop(0)
    return found


def _synonym(name: str, value: str | None, source: int) -> dict:
    return {"name": name, "value": value, "source": source}


def _entry(name: str, value: Any, read_only: bool, synonyms: list[dict], include_synonyms: bool,
           config_type: int, documentation: str | None) -> dict:
    source = synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG
    # Kafka's PASSWORD type: never sent back, only said to be there.
    sensitive = name in SENSITIVE_KEYS
    if sensitive:
        value = None
        synonyms = [dict(synonym, value=None) for synonym in synonyms]
    return {"name": name, "value": value, "read_only": read_only,
            "is_default": source == ConfigSource.DEFAULT_CONFIG, "config_source": source,
            "is_sensitive": sensitive, "synonyms": synonyms if include_synonyms else [],
            "config_type": config_type, "documentation": documentation}

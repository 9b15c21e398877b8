"""Configs of resource type GROUP (32) in DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs: a share group's ``share.*`` configs
(coordinator/share/group_configs.py). An unknown name or a bad value is
INVALID_CONFIG and changes nothing; an override is described with source
DYNAMIC_GROUP_CONFIG, a broker default with DEFAULT_CONFIG."""
from __future__ import annotations

from collections.abc import Callable, Collection

from kcore.config_def import ConfigType
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicError
from kcore.protocol.constants import ConfigSource
from kcore.protocol.errors import ErrorCode

_INT_CONFIGS = frozenset({"share.record.lock.duration.ms", "share.delivery.count.limit",
                          "share.session.timeout.ms", "share.heartbeat.interval.ms"})


def alter(broker: BrokerFacade, group_id: str, validate_only: bool,
          new_configs: Callable[[dict[str, str]], dict[str, str]]) -> tuple[int, str | None]:
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "the group name must not be empty"
    configs = broker.share_groups.configs
    current = configs.overrides(group_id)
    try:
        updated = new_configs(dict(current))
    except TopicError as exc:
        return exc.error_code, exc.message
    changes: dict[str, str | None] = {name: value for name, value in updated.items()
                                      if current.get(name) != value}
    changes.update({name: None for name in current if name not in updated})
    problem = configs.validate(changes)
    if problem is not None:
        return ErrorCode.INVALID_CONFIG, problem
    if not validate_only:
        configs.apply(group_id, changes)
    return ErrorCode.NONE, None


def describe(broker: BrokerFacade, group_id: str, keys: Collection[str] | None, include_synonyms: bool,
             include_documentation: bool) -> list[dict]:
    configs = broker.share_groups.configs
    overrides = configs.overrides(group_id)
    entries = []
    for name, value in sorted(configs.effective(group_id).items()):
        if keys is not None and name not in keys:
            continue
        source = ConfigSource.DYNAMIC_GROUP_CONFIG if name in overrides else ConfigSource.DEFAULT_CONFIG
        synonyms = [{"name": name, "value": value, "source": source}]
        entries.append({"name": name, "value": value, "read_only": False,
                        "is_default": source == ConfigSource.DEFAULT_CONFIG, "config_source": source,
                        "is_sensitive": False, "synonyms": synonyms if include_synonyms else [],
                        "config_type": (ConfigType.INT if name in _INT_CONFIGS else ConfigType.STRING).value,
                        "documentation": None})
    return entries

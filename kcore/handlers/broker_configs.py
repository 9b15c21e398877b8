"""AlterConfigs and IncrementalAlterConfigs on a BROKER resource: the
dynamic broker configs (kcore/dynamic_config.py), as Kafka's ZK-mode
``ZkAdminManager`` changes them.

The resource name is this broker's id (its own values) or "" (the cluster
default, ``<default>``); another broker's id is INVALID_REQUEST ("Unexpected
broker id"), since clients send a broker's resource to that broker. A key
defined by kcore outside ``DYNAMIC_KEYS`` or a bad value is INVALID_CONFIG
(a name kcore does not define is stored as written). The change is
written to the store (ZooKeeper or the node's metadata file) and every
broker, this one included, applies it when the store reports it.
"""
from __future__ import annotations

from collections.abc import Callable

from kcore.dynamic_config import DEFAULT_ENTITY, DynamicConfigError, validate
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicError
from kcore.protocol.errors import ErrorCode

NewConfigs = Callable[[dict[str, str]], dict[str, str]]


def entity_of(broker: BrokerFacade, resource_name: str) -> str | None:
    """The stored entity a resource name names, or None for another broker."""
    if resource_name == "":
        return DEFAULT_ENTITY
    if resource_name.strip().isdigit() and int(resource_name) == broker.config.broker_id:
        return str(broker.config.broker_id)
    return None


async def alter(broker: BrokerFacade, resource_name: str, validate_only: bool,
                new_configs: NewConfigs) -> tuple[int, str | None]:
    """Apply ``new_configs(current dynamic values) -> values`` to one entity."""
    entity = entity_of(broker, resource_name)
    if entity is None:
        return (ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected "
                f"{broker.config.broker_id}, but received {resource_name}")
    current = dict(broker.dynamic_config.configs.get(entity, {}))
    try:
        updated = new_configs(dict(current))
        changes: dict[str, str | None] = {name: value for name, value in updated.items()
                                          if current.get(name) != value}
        changes.update({name: None for name in current if name not in updated})
        validate(changes)
    except TopicError as exc:
        return exc.error_code, exc.message
    except DynamicConfigError as exc:
        return (ErrorCode.INVALID_CONFIG, f"Invalid config value for resource "
                f"ConfigResource(type=BROKER, name='{resource_name}'): {exc}")
    if changes and not validate_only:
        try:
            await broker.security_store.change_broker_configs(entity, changes)
        except TopicError as exc:  # MetadataUnavailableError: ZooKeeper did not answer
            return exc.error_code, exc.message
    return ErrorCode.NONE, None

"""IncrementalAlterConfigs (key 44): SET, DELETE, APPEND or SUBTRACT single
keys of a topic's overrides or a broker's dynamic configs
(broker_configs.py); the rest stay as they are.

APPEND and SUBTRACT apply only to list configs (cleanup.policy and the
replication throttle lists) and start from the topic's effective value,
override or default, as Kafka does."""
from __future__ import annotations

from kcore.config import TOPIC_KEYS
from kcore.config_def import ConfigType
from kcore.handlers.alter_configs import alter
from kcore.handlers.authz import config_refusal
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    responses = []
    for resource in body.resources:
        defaults = broker.dynamic_config.topic_defaults()
        refusal = config_refusal(broker, context, AclOperation.ALTER_CONFIGS,
                                 resource.resource_type, resource.resource_name)
        if refusal is not None:
            code, message = refusal, None
        else:
            code, message = await alter(broker, resource, body.validate_only,
                                        lambda current, r=resource, d=defaults: _apply(current, r.configs, d))
        responses.append({"error_code": code, "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


LIST_CONFIGS = frozenset(name for name, key in TOPIC_KEYS.items() if key.type is ConfigType.LIST)


def _apply(current: dict[str, str], changes, defaults: dict) -> dict[str, str]:
    for change in changes:
        op = change.config_operation
        if op == SET:
            current[change.name] = change.value
        elif op == DELETE:
            current.pop(change.name, None)
        elif op in (APPEND, SUBTRACT):
            if change.name not in LIST_CONFIGS:
                raise TopicError(ErrorCode.INVALID_CONFIG,
                                 f"config value append/subtract is not allowed for config key: "
                                 f"{change.name}")
            effective = current.get(change.name, defaults.get(change.name))
            items = [v for v in str(effective or "").split(",") if v]
            values = [v for v in (change.value or "").split(",") if v]
            if op == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [v for v in items if v not in values]
            current[change.name] = ",".join(items)
        else:
            raise TopicError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
    return current

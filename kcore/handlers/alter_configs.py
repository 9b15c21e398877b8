"""AlterConfigs (key 33): replace a topic's whole set of overrides, or a
broker's (or the cluster default's) dynamic configs (broker_configs.py)."""
from __future__ import annotations

from kcore.handlers import broker_configs, share_group_configs
from kcore.handlers.authz import config_refusal
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import set_topic_configs
from kcore.metadata import TopicError
from kcore.protocol.constants import ConfigResourceType
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    responses = []
    for resource in body.resources:
        refusal = config_refusal(broker, context, AclOperation.ALTER_CONFIGS,
                                 resource.resource_type, resource.resource_name)
        if refusal is not None:
            code, message = refusal, None
        else:
            code, message = await alter(broker, resource, body.validate_only,
                                        lambda current, r=resource: {c.name: c.value for c in r.configs})
        responses.append({"error_code": code, "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


async def alter(broker, resource, validate_only: bool, new_configs) -> tuple[int, str | None]:
    """Apply `new_configs(current_overrides) -> overrides` to one resource."""
    if resource.resource_type == ConfigResourceType.BROKER:
        return await broker_configs.alter(broker, resource.resource_name, validate_only, new_configs)
    if resource.resource_type == ConfigResourceType.GROUP:
        return share_group_configs.alter(broker, resource.resource_name, validate_only, new_configs)
    if resource.resource_type != ConfigResourceType.TOPIC:
        return ErrorCode.INVALID_REQUEST, f"resource type {resource.resource_type} is not supported"
    info = broker.controller.topic(resource.resource_name)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {resource.resource_name!r} does not exist"
    try:
        updated = new_configs(dict(info.configs))
        await set_topic_configs(broker, resource.resource_name, updated, validate_only)
    except TopicError as exc:
        return exc.error_code, exc.message
    return ErrorCode.NONE, None

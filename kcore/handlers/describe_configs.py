"""DescribeConfigs (key 32): every config of a topic or this broker, with
its source, synonyms (v1+) and type and documentation (v3+); configs.py
says how each is built."""
from __future__ import annotations

from kcore.handlers import configs, share_group_configs
from kcore.handlers.authz import config_refusal
from kcore.handlers.base import BrokerFacade
from kcore.protocol.constants import ConfigResourceType
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    include_synonyms = request.api_version >= 1 and body.include_synonyms
    include_documentation = request.api_version >= 3 and body.include_documentation
    results = []
    for resource in body.resources:
        refusal = config_refusal(broker, context, AclOperation.DESCRIBE_CONFIGS,
                                 resource.resource_type, resource.resource_name)
        if refusal is not None:
            results.append({"error_code": refusal, "error_message": None,
                            "resource_type": resource.resource_type,
                            "resource_name": resource.resource_name, "configs": []})
            continue
        results.append(_describe(broker, resource, include_synonyms, include_documentation))
    return {"throttle_time_ms": 0, "results": results}


def _describe(broker, resource, include_synonyms: bool, include_documentation: bool) -> dict:
    result = {"error_code": ErrorCode.NONE, "error_message": None,
              "resource_type": resource.resource_type,
              "resource_name": resource.resource_name, "configs": []}
    keys = set(resource.configuration_keys) if resource.configuration_keys else None
    if resource.resource_type == ConfigResourceType.TOPIC:
        info = broker.controller.topic(resource.resource_name)
        if info is None:
            result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result["error_message"] = f"topic {resource.resource_name!r} does not exist"
        else:
            result["configs"] = configs.describe_topic(broker, info, keys, include_synonyms,
                                                       include_documentation)
    elif resource.resource_type == ConfigResourceType.BROKER:
        if resource.resource_name not in ("", str(broker.config.broker_id)):
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = f"this is broker {broker.config.broker_id}"
        elif resource.resource_name == "":
            result["configs"] = configs.describe_broker_default(broker, keys, include_synonyms,
                                                                include_documentation)
        else:
            result["configs"] = configs.describe_broker(broker, keys, include_synonyms,
                                                        include_documentation)
    elif resource.resource_type == ConfigResourceType.GROUP:
        result["configs"] = share_group_configs.describe(broker, resource.resource_name, keys,
                                                         include_synonyms, include_documentation)
    else:
        result["error_code"] = ErrorCode.INVALID_REQUEST
        result["error_message"] = f"resource type {resource.resource_type} is not supported"
    return result

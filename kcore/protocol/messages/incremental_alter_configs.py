"""IncrementalAlterConfigs (api key 44): change single config keys (KIP-339); version 0.

config_operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.

Schemas: apache/kafka clients/src/main/resources/common/message/
IncrementalAlterConfigsRequest.json and IncrementalAlterConfigsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "IncrementalAlterConfigsRequest", api_key=44, flexible="1+",
    fields=[
        Field("resources", "[]AlterConfigsResource", "0+", fields=[
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
            Field("configs", "[]AlterableConfig", "0+", fields=[
                Field("name", "string", "0+"),
                Field("config_operation", "int8", "0+"),
                Field("value", "string", "0+", nullable="0+"),
            ]),
        ]),
        Field("validate_only", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "IncrementalAlterConfigsResponse", api_key=44, flexible="1+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("responses", "[]AlterConfigsResourceResponse", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
        ]),
    ],
)

IncrementalAlterConfigsRequest = REQUEST.data_class
IncrementalAlterConfigsResponse = RESPONSE.data_class

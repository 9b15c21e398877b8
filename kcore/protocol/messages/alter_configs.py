"""AlterConfigs (api key 33): replace resource configurations; versions 0-1.

Versions: v1 throttles after answering. Configs not listed revert to their
defaults (non-incremental).

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterConfigsRequest.json and AlterConfigsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterConfigsRequest", api_key=33, flexible="2+",
    fields=[
        Field("resources", "[]AlterConfigsResource", "0+", fields=[
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
            Field("configs", "[]AlterableConfig", "0+", fields=[
                Field("name", "string", "0+"),
                Field("value", "string", "0+", nullable="0+"),
            ]),
        ]),
        Field("validate_only", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "AlterConfigsResponse", api_key=33, flexible="2+",
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

AlterConfigsRequest = REQUEST.data_class
AlterConfigsResponse = RESPONSE.data_class

"""DescribeConfigs (api key 32): topic and broker configurations; versions 0-4.

Versions: v1 include_synonyms, config_source and synonyms (replacing v0's
is_default); v2 throttles after answering; v3 include_documentation, and
config_type and documentation per config (KIP-569); v4 is the first
flexible version. Resource types: 2 topic, 4 broker.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeConfigsRequest.json and DescribeConfigsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeConfigsRequest", api_key=32, flexible="4+",
    fields=[
        Field("resources", "[]DescribeConfigsResource", "0+", fields=[
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
            Field("configuration_keys", "[]string", "0+", nullable="0+"),
        ]),
        Field("include_synonyms", "bool", "1+"),
        Field("include_documentation", "bool", "3+"),
    ],
)

RESPONSE = Message(
    "DescribeConfigsResponse", api_key=32, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]DescribeConfigsResult", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
            Field("configs", "[]DescribeConfigsResourceResult", "0+", fields=[
                Field("name", "string", "0+"),
                Field("value", "string", "0+", nullable="0+"),
                Field("read_only", "bool", "0+"),
                Field("config_source", "int8", "1+", default=-1),
                Field("is_default", "bool", "0"),
                Field("is_sensitive", "bool", "0+"),
                Field("synonyms", "[]DescribeConfigsSynonym", "1+", fields=[
                    Field("name", "string", "1+"),
                    Field("value", "string", "1+", nullable="0+"),
                    Field("source", "int8", "1+"),
                ]),
                Field("config_type", "int8", "3+", default=0),
                Field("documentation", "string", "3+", nullable="0+"),
            ]),
        ]),
    ],
)

DescribeConfigsRequest = REQUEST.data_class
DescribeConfigsResponse = RESPONSE.data_class

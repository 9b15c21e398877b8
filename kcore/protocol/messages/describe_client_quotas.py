"""DescribeClientQuotas (api key 48): the quotas of the entities a filter
matches (KIP-546); versions 0-1, flexible from 1.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeClientQuotasRequest.json and DescribeClientQuotasResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeClientQuotasRequest", api_key=48, flexible="1+",
    fields=[
        Field("components", "[]ComponentData", "0+", fields=[
            Field("entity_type", "string", "0+"),
            Field("match_type", "int8", "0+"),
            Field("match", "string", "0+", nullable="0+"),
        ]),
        Field("strict", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "DescribeClientQuotasResponse", api_key=48, flexible="1+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+"),
        Field("entries", "[]EntryData", "0+", nullable="0+", fields=[
            Field("entity", "[]EntityData", "0+", fields=[
                Field("entity_type", "string", "0+"),
                Field("entity_name", "string", "0+", nullable="0+"),
            ]),
            Field("values", "[]ValueData", "0+", fields=[
                Field("key", "string", "0+"),
                Field("value", "float64", "0+"),
            ]),
        ]),
    ],
)

DescribeClientQuotasRequest = REQUEST.data_class
DescribeClientQuotasResponse = RESPONSE.data_class

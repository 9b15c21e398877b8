"""AlterClientQuotas (api key 49): set or remove quotas of entities
(KIP-546); versions 0-1, flexible from 1.

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterClientQuotasRequest.json and AlterClientQuotasResponse.json (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterClientQuotasRequest", api_key=49, flexible="1+",
    fields=[
        Field("entries", "[]EntryData", "0+", fields=[
            Field("entity", "[]EntityData", "0+", fields=[
                Field("entity_type", "string", "0+"),
                Field("entity_name", "string", "0+", nullable="0+"),
            ]),
            Field("ops", "[]OpData", "0+", fields=[
                Field("key", "string", "0+"),
                Field("value", "float64", "0+"),
                Field("remove", "bool", "0+"),
            ]),
        ]),
        Field("validate_only", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "AlterClientQuotasResponse", api_key=49, flexible="1+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("entries", "[]EntryData", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
            Field("entity", "[]EntityData", "0+", fields=[
                Field("entity_type", "string", "0+"),
                Field("entity_name", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

AlterClientQuotasRequest = REQUEST.data_class
AlterClientQuotasResponse = RESPONSE.data_class

"""CreateTopics (api key 19): create topics; versions 2-4.

Versions: v1 validate_only and error_message; v2 throttle_time_ms; v3
throttles after answering; v4 num_partitions and replication_factor may be
-1 for the broker defaults (KIP-464).

Schemas: apache/kafka clients/src/main/resources/common/message/
CreateTopicsRequest.json and CreateTopicsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "CreateTopicsRequest", api_key=19, flexible="5+",
    fields=[
        Field("topics", "[]CreatableTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("num_partitions", "int32", "0+"),
            Field("replication_factor", "int16", "0+"),
            Field("assignments", "[]CreatableReplicaAssignment", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("broker_ids", "[]int32", "0+"),
            ]),
            Field("configs", "[]CreatableTopicConfig", "0+", fields=[
                Field("name", "string", "0+"),
                Field("value", "string", "0+", nullable="0+"),
            ]),
        ]),
        Field("timeout_ms", "int32", "0+", default=60000),
        Field("validate_only", "bool", "1+"),
    ],
)

RESPONSE = Message(
    "CreateTopicsResponse", api_key=19, flexible="5+",
    fields=[
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", "[]CreatableTopicResult", "0+", fields=[
            Field("name", "string", "0+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "1+", nullable="0+"),
        ]),
    ],
)

CreateTopicsRequest = REQUEST.data_class
CreateTopicsResponse = RESPONSE.data_class

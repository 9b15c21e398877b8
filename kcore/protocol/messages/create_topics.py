"""CreateTopics (api key 19): create topics; versions 2-7.

Versions: v1 validate_only and error_message; v2 throttle_time_ms; v3
throttles after answering; v4 num_partitions and replication_factor may be
-1 for the broker defaults (KIP-464); v5 flexible, and each result says
the topic's partition count, replication factor and every config as
DescribeConfigs would (KIP-525, also for validate_only); v6 may answer
THROTTLING_QUOTA_EXCEEDED (KIP-599); v7 the created topic's topic_id.

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
            Field("topic_id", "uuid", "7+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "1+", nullable="0+"),
            Field("topic_config_error_code", "int16", "5+", tag=0, tagged="5+"),
            Field("num_partitions", "int32", "5+", default=-1),
            Field("replication_factor", "int16", "5+", default=-1),
            Field("configs", "[]CreatableTopicConfigs", "5+", nullable="5+", fields=[
                Field("name", "string", "5+"),
                Field("value", "string", "5+", nullable="5+"),
                Field("read_only", "bool", "5+"),
                Field("config_source", "int8", "5+", default=-1),
                Field("is_sensitive", "bool", "5+"),
            ]),
        ]),
    ],
)

CreateTopicsRequest = REQUEST.data_class
CreateTopicsResponse = RESPONSE.data_class

"""CreatePartitions (api key 37): add partitions to topics; versions 0-1.

Versions: v1 throttles after answering. ``count`` is the new total.

Schemas: apache/kafka clients/src/main/resources/common/message/
CreatePartitionsRequest.json and CreatePartitionsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "CreatePartitionsRequest", api_key=37, flexible="2+",
    fields=[
        Field("topics", "[]CreatePartitionsTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("count", "int32", "0+"),
            Field("assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
                Field("broker_ids", "[]int32", "0+"),
            ]),
        ]),
        Field("timeout_ms", "int32", "0+"),
        Field("validate_only", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "CreatePartitionsResponse", api_key=37, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]CreatePartitionsTopicResult", "0+", fields=[
            Field("name", "string", "0+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
        ]),
    ],
)

CreatePartitionsRequest = REQUEST.data_class
CreatePartitionsResponse = RESPONSE.data_class

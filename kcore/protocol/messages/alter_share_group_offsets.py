"""AlterShareGroupOffsets (api key 91): set share-partition start offsets of an empty share group; version 0.

NON_EMPTY_GROUP while the group has members.

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterShareGroupOffsetsRequest.json and AlterShareGroupOffsetsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterShareGroupOffsetsRequest", api_key=91, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]AlterShareGroupOffsetsRequestTopic", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("partitions", "[]AlterShareGroupOffsetsRequestPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("start_offset", "int64", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "AlterShareGroupOffsetsResponse", api_key=91, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("responses", "[]AlterShareGroupOffsetsResponseTopic", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]AlterShareGroupOffsetsResponsePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

AlterShareGroupOffsetsRequest = REQUEST.data_class
AlterShareGroupOffsetsResponse = RESPONSE.data_class

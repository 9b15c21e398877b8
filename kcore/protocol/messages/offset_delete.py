"""OffsetDelete (api key 47): delete a group's committed offsets (KIP-496); version 0.

Never flexible. GROUP_SUBSCRIBED_TO_TOPIC when the group still consumes it.

Schemas: apache/kafka clients/src/main/resources/common/message/
OffsetDeleteRequest.json and OffsetDeleteResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "OffsetDeleteRequest", api_key=47, flexible="none",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]OffsetDeleteRequestTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OffsetDeleteRequestPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "OffsetDeleteResponse", api_key=47, flexible="none",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("throttle_time_ms", "int32", "0+"),
        Field("topics", "[]OffsetDeleteResponseTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OffsetDeleteResponsePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

OffsetDeleteRequest = REQUEST.data_class
OffsetDeleteResponse = RESPONSE.data_class

"""DeleteShareGroupOffsets (api key 92): forget an empty share group's state for whole topics; version 0.

NON_EMPTY_GROUP while the group has members.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteShareGroupOffsetsRequest.json and DeleteShareGroupOffsetsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteShareGroupOffsetsRequest", api_key=92, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]DeleteShareGroupOffsetsRequestTopic", "0+", fields=[
            Field("topic_name", "string", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "DeleteShareGroupOffsetsResponse", api_key=92, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("responses", "[]DeleteShareGroupOffsetsResponseTopic", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("topic_id", "uuid", "0+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ],
)

DeleteShareGroupOffsetsRequest = REQUEST.data_class
DeleteShareGroupOffsetsResponse = RESPONSE.data_class

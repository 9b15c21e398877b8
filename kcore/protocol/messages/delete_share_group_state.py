"""DeleteShareGroupState (api key 86): forget a share-partition's persisted state; version 0.

Sent by the group coordinator when a share group, or its offsets for a
topic, are deleted: the share coordinator writes a tombstone.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteShareGroupStateRequest.json and DeleteShareGroupStateResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteShareGroupStateRequest", api_key=86, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]DeleteStateData", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "DeleteShareGroupStateResponse", api_key=86, flexible="0+",
    fields=[
        Field("results", "[]DeleteStateResult", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionResult", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

DeleteShareGroupStateRequest = REQUEST.data_class
DeleteShareGroupStateResponse = RESPONSE.data_class

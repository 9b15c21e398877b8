"""ReadShareGroupState (api key 84): a share-partition's persisted state; version 0.

Sent by a share-partition's leader to its share coordinator when it loads
the share-partition: the start offset, the state epoch and the state
batches (offset ranges with a delivery state, 0 available, 2 acknowledged,
4 archived, and a delivery count) past it.

Schemas: apache/kafka clients/src/main/resources/common/message/
ReadShareGroupStateRequest.json and ReadShareGroupStateResponse.json (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ReadShareGroupStateRequest", api_key=84, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]ReadStateData", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ReadShareGroupStateResponse", api_key=84, flexible="0+",
    fields=[
        Field("results", "[]ReadStateResult", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionResult", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
                Field("state_epoch", "int32", "0+"),
                Field("start_offset", "int64", "0+"),
                Field("state_batches", "[]StateBatch", "0+", fields=[
                    Field("first_offset", "int64", "0+"),
                    Field("last_offset", "int64", "0+"),
                    Field("delivery_state", "int8", "0+"),
                    Field("delivery_count", "int16", "0+"),
                ]),
            ]),
        ]),
    ],
)

ReadShareGroupStateRequest = REQUEST.data_class
ReadShareGroupStateResponse = RESPONSE.data_class

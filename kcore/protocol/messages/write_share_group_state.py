"""WriteShareGroupState (api key 85): persist a share-partition's state; versions 0-1.

Sent by a share-partition's leader to its share coordinator whenever the
start offset or a record's state changes (an acknowledgement, a lock that
expired). v1 (Kafka 4.2, KIP-1226) adds the delivery complete count: how
many offsets at or past the start offset are acknowledged or archived, from
which the share-partition lag is computed.

Schemas: apache/kafka clients/src/main/resources/common/message/
WriteShareGroupStateRequest.json and WriteShareGroupStateResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "WriteShareGroupStateRequest", api_key=85, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]WriteStateData", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("state_epoch", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
                Field("start_offset", "int64", "0+"),
                Field("delivery_complete_count", "int32", "1+", default=-1),
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

RESPONSE = Message(
    "WriteShareGroupStateResponse", api_key=85, flexible="0+",
    fields=[
        Field("results", "[]WriteStateResult", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionResult", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

WriteShareGroupStateRequest = REQUEST.data_class
WriteShareGroupStateResponse = RESPONSE.data_class

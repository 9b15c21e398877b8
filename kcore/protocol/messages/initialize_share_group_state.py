"""InitializeShareGroupState (api key 83): set a share-partition's start offset and state epoch; version 0.

Sent by the group coordinator to the share coordinator (KIP-932): the
share coordinator is the leader of the share-partition's
``__share_group_state`` partition, found with FindCoordinator key type 2
and the key "group:topic_id:partition".

Schemas: apache/kafka clients/src/main/resources/common/message/
InitializeShareGroupStateRequest.json and
InitializeShareGroupStateResponse.json (field names: snake_case of the JSON
names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "InitializeShareGroupStateRequest", api_key=83, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]InitializeStateData", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("state_epoch", "int32", "0+"),
                Field("start_offset", "int64", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "InitializeShareGroupStateResponse", api_key=83, flexible="0+",
    fields=[
        Field("results", "[]InitializeStateResult", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionResult", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

InitializeShareGroupStateRequest = REQUEST.data_class
InitializeShareGroupStateResponse = RESPONSE.data_class

"""ListOffsets (api key 2): offsets by timestamp (-1 latest, -2 earliest); versions 1-5.

Versions: v1 one timestamp/offset pair per partition (v0's offset lists are
gone); v2 isolation_level; v3 throttles after answering; v4
current_leader_epoch and leader_epoch (KIP-320); v5 may answer
OFFSET_NOT_AVAILABLE.

Schemas: apache/kafka clients/src/main/resources/common/message/
ListOffsetsRequest.json and ListOffsetsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ListOffsetsRequest", api_key=2, flexible="6+",
    fields=[
        Field("replica_id", "int32", "0+"),
        Field("isolation_level", "int8", "2+"),
        Field("topics", "[]ListOffsetsTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]ListOffsetsPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("current_leader_epoch", "int32", "4+", default=-1),
                Field("timestamp", "int64", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ListOffsetsResponse", api_key=2, flexible="6+",
    fields=[
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", "[]ListOffsetsTopicResponse", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("timestamp", "int64", "1+", default=-1),
                Field("offset", "int64", "1+", default=-1),
                Field("leader_epoch", "int32", "4+", default=-1),
            ]),
        ]),
    ],
)

ListOffsetsRequest = REQUEST.data_class
ListOffsetsResponse = RESPONSE.data_class

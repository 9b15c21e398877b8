"""ListOffsets (api key 2): offsets by timestamp or special timestamp; versions 1-11.

Versions: v1 one timestamp/offset pair per partition (v0's offset lists are
gone); v2 isolation_level; v3 throttles after answering; v4
current_leader_epoch and leader_epoch (KIP-320); v5 may answer
OFFSET_NOT_AVAILABLE; v6 the flexible encoding; v7 -3, the record with the
largest timestamp (KIP-734); v8 -4, the start of the local log (KIP-405);
v9 -5, the last offset in tiered storage (KIP-1005); v10 timeout_ms, how
long a lookup in tiered storage may take (KIP-1075); v11 -6, the first
offset not yet uploaded to tiered storage (KIP-1023).

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
        Field("timeout_ms", "int32", "10+"),
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

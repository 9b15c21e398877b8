"""OffsetForLeaderEpoch (api key 23): end offset of a leader epoch (KIP-101); versions 2-4.

Versions: v2 current_leader_epoch and throttle_time_ms (KIP-320); v3
replica_id (-1 consumer, -2 debug, >= 0 follower); v4 the flexible
encoding. Followers use it to
truncate to the leader's epoch boundary; clients to detect log truncation.

Schemas: apache/kafka clients/src/main/resources/common/message/
OffsetForLeaderEpochRequest.json and OffsetForLeaderEpochResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "OffsetForLeaderEpochRequest", api_key=23, flexible="4+",
    fields=[
        Field("replica_id", "int32", "3+", default=-2),
        Field("topics", "[]OffsetForLeaderTopic", "0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]OffsetForLeaderPartition", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("current_leader_epoch", "int32", "2+", default=-1),
                Field("leader_epoch", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "OffsetForLeaderEpochResponse", api_key=23, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]EpochEndOffset", "0+", fields=[
                Field("error_code", "int16", "0+"),
                Field("partition", "int32", "0+"),
                Field("leader_epoch", "int32", "1+", default=-1),
                Field("end_offset", "int64", "0+", default=-1),
            ]),
        ]),
    ],
)

OffsetForLeaderEpochRequest = REQUEST.data_class
OffsetForLeaderEpochResponse = RESPONSE.data_class

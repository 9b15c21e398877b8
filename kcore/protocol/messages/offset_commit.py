"""OffsetCommit (api key 8), versions 2-7.

Source: apache/kafka clients/src/main/resources/common/message/OffsetCommitRequest.json
and OffsetCommitResponse.json.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "OffsetCommitRequest", api_key=8, flexible="8+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("generation_id_or_member_epoch", "int32", "1+", default=-1),
        Field("member_id", "string", "1+"),
        Field("group_instance_id", "string", "7+", nullable="7+"),
        Field("retention_time_ms", "int64", "2-4", default=-1),
        Field("topics", "[]OffsetCommitRequestTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("committed_offset", "int64", "0+"),
                Field("committed_leader_epoch", "int32", "6+", default=-1),
                Field("committed_metadata", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "OffsetCommitResponse", api_key=8, flexible="8+",
    fields=[
        Field("throttle_time_ms", "int32", "3+"),
        Field("topics", "[]OffsetCommitResponseTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

OffsetCommitRequest = REQUEST.data_class
OffsetCommitResponse = RESPONSE.data_class

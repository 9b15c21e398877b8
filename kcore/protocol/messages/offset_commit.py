"""OffsetCommit (api key 8): store a group's consumed offsets; versions 2-9.

Versions: v2-4 retention_time_ms (-1 = broker default); v3 throttle_time_ms;
v4 throttles after answering; v5 drops retention_time_ms; v6
committed_leader_epoch (KIP-320); v7 group_instance_id (KIP-345); v8 flexible; v9 a consumer-protocol member
(KIP-848) commits with its member epoch, checked (STALE_MEMBER_EPOCH) and an
unknown group answers GROUP_ID_NOT_FOUND. The field
Kafka 2.x called generation_id is generation_id_or_member_epoch.

Schemas: apache/kafka clients/src/main/resources/common/message/
OffsetCommitRequest.json and OffsetCommitResponse.json (field names: snake_case of
the JSON names).
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

"""TxnOffsetCommit (api key 28): commit offsets inside a transaction; versions 0-3.

Versions: v1 behaviour bump (throttling); v2 committed_leader_epoch; v3 is
flexible and carries the consumer's group generation and member (KIP-447).

Schemas: apache/kafka clients/src/main/resources/common/message/
TxnOffsetCommitRequest.json and TxnOffsetCommitResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "TxnOffsetCommitRequest", api_key=28, flexible="3+",
    fields=[
        Field("transactional_id", "string", "0+"),
        Field("group_id", "string", "0+"),
        Field("producer_id", "int64", "0+"),
        Field("producer_epoch", "int16", "0+"),
        Field("generation_id", "int32", "3+", default=-1),
        Field("member_id", "string", "3+", default=""),
        Field("group_instance_id", "string", "3+", nullable="3+", default=None),
        Field("topics", "[]TxnOffsetCommitRequestTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]TxnOffsetCommitRequestPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("committed_offset", "int64", "0+"),
                Field("committed_leader_epoch", "int32", "2+", default=-1),
                Field("committed_metadata", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "TxnOffsetCommitResponse", api_key=28, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("topics", "[]TxnOffsetCommitResponseTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]TxnOffsetCommitResponsePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

TxnOffsetCommitRequest = REQUEST.data_class
TxnOffsetCommitResponse = RESPONSE.data_class

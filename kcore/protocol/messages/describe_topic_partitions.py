"""DescribeTopicPartitions (api key 75): topics and their partitions, a page
at a time (KIP-966); version 0.

Flexible from v0. The request names topics (none: every topic), bounds the
partitions of one answer (response_partition_limit, default 2000) and may
start at a cursor (a topic and a partition index); the answer's
next_cursor is where the next page starts, null after the last.
Partitions carry eligible_leader_replicas and last_known_elr (KIP-966's
ELR), which a ZooKeeper-mode broker does not keep.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeTopicPartitionsRequest.json and DescribeTopicPartitionsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

# The spec's Cursor struct, in the request and (as next_cursor) the response.
_CURSOR = [
    Field("topic_name", "string", "0+"),
    Field("partition_index", "int32", "0+"),
]

REQUEST = Message(
    "DescribeTopicPartitionsRequest", api_key=75, flexible="0+",
    fields=[
        Field("topics", "[]TopicRequest", "0+", fields=[
            Field("name", "string", "0+"),
        ]),
        Field("response_partition_limit", "int32", "0+", default=2000),
        Field("cursor", "Cursor", "0+", nullable="0+", default=None, fields=_CURSOR),
    ],
)

RESPONSE = Message(
    "DescribeTopicPartitionsResponse", api_key=75, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("topics", "[]DescribeTopicPartitionsResponseTopic", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("name", "string", "0+", nullable="0+"),
            Field("topic_id", "uuid", "0+"),
            Field("is_internal", "bool", "0+"),
            Field("partitions", "[]DescribeTopicPartitionsResponsePartition", "0+", fields=[
                Field("error_code", "int16", "0+"),
                Field("partition_index", "int32", "0+"),
                Field("leader_id", "int32", "0+"),
                Field("leader_epoch", "int32", "0+", default=-1),
                Field("replica_nodes", "[]int32", "0+"),
                Field("isr_nodes", "[]int32", "0+"),
                Field("eligible_leader_replicas", "[]int32", "0+", nullable="0+", default=None),
                Field("last_known_elr", "[]int32", "0+", nullable="0+", default=None),
                Field("offline_replicas", "[]int32", "0+"),
            ]),
            Field("topic_authorized_operations", "int32", "0+", default=-0x80000000),
        ]),
        Field("next_cursor", "Cursor", "0+", nullable="0+", default=None, fields=_CURSOR),
    ],
)

DescribeTopicPartitionsRequest = REQUEST.data_class
DescribeTopicPartitionsResponse = RESPONSE.data_class

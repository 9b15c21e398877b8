"""DescribeShareGroupOffsets (api key 90): share-partition start offsets of share groups; versions 0-1.

Topics are named by name (null asks for every topic the group has state
for). v1 (Kafka 4.2, KIP-1226) adds each partition's lag: records past
the start offset not yet acknowledged or archived.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeShareGroupOffsetsRequest.json and
DescribeShareGroupOffsetsResponse.json (field names: snake_case of the JSON
names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeShareGroupOffsetsRequest", api_key=90, flexible="0+",
    fields=[
        Field("groups", "[]DescribeShareGroupOffsetsRequestGroup", "0+", fields=[
            Field("group_id", "string", "0+"),
            Field("topics", "[]DescribeShareGroupOffsetsRequestTopic", "0+", nullable="0+",
                  fields=[
                      Field("topic_name", "string", "0+"),
                      Field("partitions", "[]int32", "0+"),
                  ]),
        ]),
    ],
)

RESPONSE = Message(
    "DescribeShareGroupOffsetsResponse", api_key=90, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("groups", "[]DescribeShareGroupOffsetsResponseGroup", "0+", fields=[
            Field("group_id", "string", "0+"),
            Field("topics", "[]DescribeShareGroupOffsetsResponseTopic", "0+", fields=[
                Field("topic_name", "string", "0+"),
                Field("topic_id", "uuid", "0+"),
                Field("partitions", "[]DescribeShareGroupOffsetsResponsePartition", "0+", fields=[
                    Field("partition_index", "int32", "0+"),
                    Field("start_offset", "int64", "0+"),
                    Field("leader_epoch", "int32", "0+"),
                    Field("lag", "int64", "1+", default=-1),
                    Field("error_code", "int16", "0+"),
                    Field("error_message", "string", "0+", nullable="0+", default=None),
                ]),
            ]),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ],
)

DescribeShareGroupOffsetsRequest = REQUEST.data_class
DescribeShareGroupOffsetsResponse = RESPONSE.data_class

"""DescribeLogDirs (api key 35): each log directory of a broker, with the
size and offset lag of the replicas it holds (KIP-113); versions 1-5.

v0 left Kafka in 4.0 (v1 is its baseline and the same as v0); v1 answers
before throttling; v2 is the first flexible version; v3 adds the top-level
error_code (CLUSTER_AUTHORIZATION_FAILED); v4 total_bytes / usable_bytes
of each directory's volume (KIP-827); v5 is_cordoned (KIP-1066). A null
``topics`` asks for every partition.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeLogDirsRequest.json and DescribeLogDirsResponse.json (field names:
snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeLogDirsRequest", api_key=35, flexible="2+",
    fields=[
        Field("topics", "[]DescribableLogDirTopic", "0+", nullable="0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "DescribeLogDirsResponse", api_key=35, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "3+"),
        Field("results", "[]DescribeLogDirsResult", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("log_dir", "string", "0+"),
            Field("topics", "[]DescribeLogDirsTopic", "0+", fields=[
                Field("name", "string", "0+"),
                Field("partitions", "[]DescribeLogDirsPartition", "0+", fields=[
                    Field("partition_index", "int32", "0+"),
                    Field("partition_size", "int64", "0+"),
                    Field("offset_lag", "int64", "0+"),
                    Field("is_future_key", "bool", "0+"),
                ]),
            ]),
            Field("total_bytes", "int64", "4+", default=-1),
            Field("usable_bytes", "int64", "4+", default=-1),
            Field("is_cordoned", "bool", "5+", default=False),
        ]),
    ],
)

DescribeLogDirsRequest = REQUEST.data_class
DescribeLogDirsResponse = RESPONSE.data_class

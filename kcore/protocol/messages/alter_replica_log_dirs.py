"""AlterReplicaLogDirs (api key 34): move replicas of a broker to another
of its log directories (KIP-113); versions 1-2.

v0 left Kafka in 4.0 (v1 is its baseline and the same as v0); v1 answers
before throttling; v2 is flexible. The request names each destination
``path`` with the partitions to move there; the answer has one error code
per partition.

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterReplicaLogDirsRequest.json and AlterReplicaLogDirsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterReplicaLogDirsRequest", api_key=34, flexible="2+",
    fields=[
        Field("dirs", "[]AlterReplicaLogDir", "0+", fields=[
            Field("path", "string", "0+"),
            Field("topics", "[]AlterReplicaLogDirTopic", "0+", fields=[
                Field("name", "string", "0+"),
                Field("partitions", "[]int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "AlterReplicaLogDirsResponse", api_key=34, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]AlterReplicaLogDirTopicResult", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("partitions", "[]AlterReplicaLogDirPartitionResult", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

AlterReplicaLogDirsRequest = REQUEST.data_class
AlterReplicaLogDirsResponse = RESPONSE.data_class

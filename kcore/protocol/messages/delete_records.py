"""DeleteRecords (api key 21): move partitions' log start offsets forward,
deleting the records below them (KIP-107); versions 0-2.

Versions: v1 throttles after answering; v2 is the first flexible version.
An offset of -1 means the partition's high watermark; ``low_watermark`` is
the smallest log start offset over the partition's live replicas once the
deletion is replicated, -1 with an error.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteRecordsRequest.json and DeleteRecordsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteRecordsRequest", api_key=21, flexible="2+",
    fields=[
        Field("topics", "[]DeleteRecordsTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]DeleteRecordsPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("offset", "int64", "0+"),
            ]),
        ]),
        Field("timeout_ms", "int32", "0+"),
    ],
)

RESPONSE = Message(
    "DeleteRecordsResponse", api_key=21, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("topics", "[]DeleteRecordsTopicResult", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]DeleteRecordsPartitionResult", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("low_watermark", "int64", "0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

DeleteRecordsRequest = REQUEST.data_class
DeleteRecordsResponse = RESPONSE.data_class

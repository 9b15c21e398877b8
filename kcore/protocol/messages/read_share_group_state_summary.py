"""ReadShareGroupStateSummary (api key 87): a share-partition's start offset and epochs; versions 0-1.

What DescribeShareGroupOffsets needs without the state batches. v1 (Kafka
4.2, KIP-1226) adds the delivery complete count, from which the lag is
computed.

Schemas: apache/kafka clients/src/main/resources/common/message/
ReadShareGroupStateSummaryRequest.json and
ReadShareGroupStateSummaryResponse.json (field names: snake_case of the
JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ReadShareGroupStateSummaryRequest", api_key=87, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]ReadStateSummaryData", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ReadShareGroupStateSummaryResponse", api_key=87, flexible="0+",
    fields=[
        Field("results", "[]ReadStateSummaryResult", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionResult", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
                Field("state_epoch", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
                Field("start_offset", "int64", "0+"),
                Field("delivery_complete_count", "int32", "1+", default=-1),
            ]),
        ]),
    ],
)

ReadShareGroupStateSummaryRequest = REQUEST.data_class
ReadShareGroupStateSummaryResponse = RESPONSE.data_class

"""AddPartitionsToTxn (api key 24): add partitions to a transaction; versions 0-2.

Versions: v1 and v2 are behaviour bumps (throttling). The v3_and_below_*
names are Kafka's: later versions batch several transactions.

Schemas: apache/kafka clients/src/main/resources/common/message/
AddPartitionsToTxnRequest.json and AddPartitionsToTxnResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AddPartitionsToTxnRequest", api_key=24, flexible="3+",
    fields=[
        Field("v3_and_below_transactional_id", "string", "0+"),
        Field("v3_and_below_producer_id", "int64", "0+"),
        Field("v3_and_below_producer_epoch", "int16", "0+"),
        Field("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "AddPartitionsToTxnResponse", api_key=24, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0+", fields=[
            Field("name", "string", "0+"),
            Field("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("partition_error_code", "int16", "0+"),
            ]),
        ]),
    ],
)

AddPartitionsToTxnRequest = REQUEST.data_class
AddPartitionsToTxnResponse = RESPONSE.data_class

"""AddPartitionsToTxn (api key 24): add partitions to a transaction, or (v4+,
brokers only) check that they are in it; versions 0-5.

Versions: v1 and v2 are behaviour bumps (throttling, PRODUCER_FENCED); v3
is the first flexible one. Clients send v0-v3: one transaction, its fields
named v3_and_below_*. v4 (KIP-890 part 1) is sent by brokers: several
transactions per request, each with ``verify_only`` (check that the
partitions are in the ongoing transaction, change nothing), and a
top-level error_code in the response. v5 lets the answer carry
TRANSACTION_ABORTABLE.

Schemas: apache/kafka clients/src/main/resources/common/message/
AddPartitionsToTxnRequest.json and AddPartitionsToTxnResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message


def _topics(name: str, versions: str) -> Field:
    return Field(name, "[]AddPartitionsToTxnTopic", versions, fields=[
        Field("name", "string", "0+"),
        Field("partitions", "[]int32", "0+"),
    ])


def _topic_results(name: str, versions: str) -> Field:
    return Field(name, "[]AddPartitionsToTxnTopicResult", versions, fields=[
        Field("name", "string", "0+"),
        Field("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
            Field("partition_index", "int32", "0+"),
            Field("partition_error_code", "int16", "0+"),
        ]),
    ])


REQUEST = Message(
    "AddPartitionsToTxnRequest", api_key=24, flexible="3+",
    fields=[
        Field("transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
            Field("transactional_id", "string", "4+"),
            Field("producer_id", "int64", "4+"),
            Field("producer_epoch", "int16", "4+"),
            Field("verify_only", "bool", "4+", default=False),
            _topics("topics", "4+"),
        ]),
        Field("v3_and_below_transactional_id", "string", "0-3"),
        Field("v3_and_below_producer_id", "int64", "0-3"),
        Field("v3_and_below_producer_epoch", "int16", "0-3"),
        _topics("v3_and_below_topics", "0-3"),
    ],
)

RESPONSE = Message(
    "AddPartitionsToTxnResponse", api_key=24, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "4+"),
        Field("results_by_transaction", "[]AddPartitionsToTxnResult", "4+", fields=[
            Field("transactional_id", "string", "4+"),
            _topic_results("topic_results", "4+"),
        ]),
        _topic_results("results_by_topic_v3_and_below", "0-3"),
    ],
)

AddPartitionsToTxnRequest = REQUEST.data_class
AddPartitionsToTxnResponse = RESPONSE.data_class

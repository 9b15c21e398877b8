"""DescribeTransactions (api key 65): the coordinator's state of
transactional ids (KIP-664); version 0, flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeTransactionsRequest.json and DescribeTransactionsResponse.json (field names: snake_case
of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeTransactionsRequest", api_key=65, flexible="0+",
    fields=[
        Field("transactional_ids", "[]string", "0+"),
    ],
)

RESPONSE = Message(
    "DescribeTransactionsResponse", api_key=65, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("transaction_states", "[]TransactionState", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("transactional_id", "string", "0+"),
            Field("transaction_state", "string", "0+"),
            Field("transaction_timeout_ms", "int32", "0+"),
            Field("transaction_start_time_ms", "int64", "0+"),
            Field("producer_id", "int64", "0+"),
            Field("producer_epoch", "int16", "0+"),
            Field("topics", "[]TopicData", "0+", fields=[
                Field("topic", "string", "0+"),
                Field("partitions", "[]int32", "0+"),
            ]),
        ]),
    ],
)

DescribeTransactionsRequest = REQUEST.data_class
DescribeTransactionsResponse = RESPONSE.data_class

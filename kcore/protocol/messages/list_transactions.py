"""ListTransactions (api key 66): the transactional ids a coordinator
holds, filtered by state, producer id and (v1) age (KIP-664, KIP-994);
versions 0-1, flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
ListTransactionsRequest.json and ListTransactionsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ListTransactionsRequest", api_key=66, flexible="0+",
    fields=[
        Field("state_filters", "[]string", "0+"),
        Field("producer_id_filters", "[]int64", "0+"),
        Field("duration_filter", "int64", "1+", default=-1),
    ],
)

RESPONSE = Message(
    "ListTransactionsResponse", api_key=66, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("unknown_state_filters", "[]string", "0+"),
        Field("transaction_states", "[]TransactionState", "0+", fields=[
            Field("transactional_id", "string", "0+"),
            Field("producer_id", "int64", "0+"),
            Field("transaction_state", "string", "0+"),
        ]),
    ],
)

ListTransactionsRequest = REQUEST.data_class
ListTransactionsResponse = RESPONSE.data_class

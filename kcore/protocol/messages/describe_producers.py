"""DescribeProducers (api key 61): the active producers of partitions
(KIP-664, for finding hanging transactions); version 0, flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeProducersRequest.json and DescribeProducersResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeProducersRequest", api_key=61, flexible="0+",
    fields=[
        Field("topics", "[]TopicRequest", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partition_indexes", "[]int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "DescribeProducersResponse", api_key=61, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("topics", "[]TopicResponse", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]PartitionResponse", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
                Field("active_producers", "[]ProducerState", "0+", fields=[
                    Field("producer_id", "int64", "0+"),
                    Field("producer_epoch", "int32", "0+"),
                    Field("last_sequence", "int32", "0+", default=-1),
                    Field("last_timestamp", "int64", "0+", default=-1),
                    Field("coordinator_epoch", "int32", "0+"),
                    Field("current_txn_start_offset", "int64", "0+", default=-1),
                ]),
            ]),
        ]),
    ],
)

DescribeProducersRequest = REQUEST.data_class
DescribeProducersResponse = RESPONSE.data_class

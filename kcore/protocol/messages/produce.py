"""Produce (api key 0), versions 0-7.

Source: apache/kafka clients/src/main/resources/common/message/ProduceRequest.json
and ProduceResponse.json.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ProduceRequest", api_key=0, flexible="9+",
    fields=[
        Field("transactional_id", "string", "3+", nullable="3+"),
        Field("acks", "int16", "0+"),
        Field("timeout_ms", "int32", "0+"),
        Field("topic_data", "[]TopicProduceData", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partition_data", "[]PartitionProduceData", "0+", fields=[
                Field("index", "int32", "0+"),
                Field("records", "records", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ProduceResponse", api_key=0, flexible="9+",
    fields=[
        Field("responses", "[]TopicProduceResponse", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partition_responses", "[]PartitionProduceResponse", "0+", fields=[
                Field("index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("base_offset", "int64", "0+"),
                Field("log_append_time_ms", "int64", "2+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
            ]),
        ]),
        Field("throttle_time_ms", "int32", "1+"),
    ],
)

ProduceRequest = REQUEST.data_class
ProduceResponse = RESPONSE.data_class

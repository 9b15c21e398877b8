"""WriteTxnMarkers (api key 27): coordinator-to-leader transaction markers; versions 0-1.

Broker to broker only; no client sends it. v1 is the flexible form of v0.
transaction_result true = COMMIT.

Schemas: apache/kafka clients/src/main/resources/common/message/
WriteTxnMarkersRequest.json and WriteTxnMarkersResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "WriteTxnMarkersRequest", api_key=27, flexible="1+",
    fields=[
        Field("markers", "[]WritableTxnMarker", "0+", fields=[
            Field("producer_id", "int64", "0+"),
            Field("producer_epoch", "int16", "0+"),
            Field("transaction_result", "bool", "0+"),
            Field("topics", "[]WritableTxnMarkerTopic", "0+", fields=[
                Field("name", "string", "0+"),
                Field("partition_indexes", "[]int32", "0+"),
            ]),
            Field("coordinator_epoch", "int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "WriteTxnMarkersResponse", api_key=27, flexible="1+",
    fields=[
        Field("markers", "[]WritableTxnMarkerResult", "0+", fields=[
            Field("producer_id", "int64", "0+"),
            Field("topics", "[]WritableTxnMarkerTopicResult", "0+", fields=[
                Field("name", "string", "0+"),
                Field("partitions", "[]WritableTxnMarkerPartitionResult", "0+", fields=[
                    Field("partition_index", "int32", "0+"),
                    Field("error_code", "int16", "0+"),
                ]),
            ]),
        ]),
    ],
)

WriteTxnMarkersRequest = REQUEST.data_class
WriteTxnMarkersResponse = RESPONSE.data_class

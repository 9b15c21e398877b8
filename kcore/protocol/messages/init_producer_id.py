"""InitProducerId (api key 22): a producer id and epoch for idempotence/transactions; versions 0-4.

Versions: v1 throttles after answering; v2 is flexible; v3 adds the
producer id and epoch a recovering producer had (KIP-360); v4 may answer
PRODUCER_FENCED (older versions get INVALID_PRODUCER_EPOCH). A null
transactional_id asks for an idempotent-only producer id.

Schemas: apache/kafka clients/src/main/resources/common/message/
InitProducerIdRequest.json and InitProducerIdResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "InitProducerIdRequest", api_key=22, flexible="2+",
    fields=[
        Field("transactional_id", "string", "0+", nullable="0+"),
        Field("transaction_timeout_ms", "int32", "0+"),
        Field("producer_id", "int64", "3+", default=-1),
        Field("producer_epoch", "int16", "3+", default=-1),
    ],
)

RESPONSE = Message(
    "InitProducerIdResponse", api_key=22, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("producer_id", "int64", "0+", default=-1),
        Field("producer_epoch", "int16", "0+"),
    ],
)

InitProducerIdRequest = REQUEST.data_class
InitProducerIdResponse = RESPONSE.data_class

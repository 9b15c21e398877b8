"""EndTxn (api key 26): commit or abort a transaction; versions 0-2.

Versions: v1 and v2 are behaviour bumps (throttling). committed=true commits.

Schemas: apache/kafka clients/src/main/resources/common/message/
EndTxnRequest.json and EndTxnResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "EndTxnRequest", api_key=26, flexible="3+",
    fields=[
        Field("transactional_id", "string", "0+"),
        Field("producer_id", "int64", "0+"),
        Field("producer_epoch", "int16", "0+"),
        Field("committed", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "EndTxnResponse", api_key=26, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
    ],
)

EndTxnRequest = REQUEST.data_class
EndTxnResponse = RESPONSE.data_class

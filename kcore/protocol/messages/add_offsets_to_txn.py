"""AddOffsetsToTxn (api key 25): add a group's offsets to a transaction; versions 0-2.

Versions: v1 and v2 are behaviour bumps (throttling).

Schemas: apache/kafka clients/src/main/resources/common/message/
AddOffsetsToTxnRequest.json and AddOffsetsToTxnResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AddOffsetsToTxnRequest", api_key=25, flexible="3+",
    fields=[
        Field("transactional_id", "string", "0+"),
        Field("producer_id", "int64", "0+"),
        Field("producer_epoch", "int16", "0+"),
        Field("group_id", "string", "0+"),
    ],
)

RESPONSE = Message(
    "AddOffsetsToTxnResponse", api_key=25, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
    ],
)

AddOffsetsToTxnRequest = REQUEST.data_class
AddOffsetsToTxnResponse = RESPONSE.data_class

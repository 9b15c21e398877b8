"""FindCoordinator (api key 10): the broker coordinating a group or transaction; versions 0-2.

Versions: v1 key_type (0 group, 1 transaction), throttle_time_ms and
error_message; v2 throttles after answering.

Schemas: apache/kafka clients/src/main/resources/common/message/
FindCoordinatorRequest.json and FindCoordinatorResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "FindCoordinatorRequest", api_key=10, flexible="3+",
    fields=[
        Field("key", "string", "0+"),
        Field("key_type", "int8", "1+"),
    ],
)

RESPONSE = Message(
    "FindCoordinatorResponse", api_key=10, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "1+", nullable="1+"),
        Field("node_id", "int32", "0+"),
        Field("host", "string", "0+"),
        Field("port", "int32", "0+"),
    ],
)

FindCoordinatorRequest = REQUEST.data_class
FindCoordinatorResponse = RESPONSE.data_class

"""Heartbeat (api key 12), versions 0-3.

Source: apache/kafka clients/src/main/resources/common/message/HeartbeatRequest.json
and HeartbeatResponse.json.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "HeartbeatRequest", api_key=12, flexible="4+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("generation_id", "int32", "0+"),
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "3+", nullable="3+"),
    ],
)

RESPONSE = Message(
    "HeartbeatResponse", api_key=12, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0+"),
    ],
)

HeartbeatRequest = REQUEST.data_class
HeartbeatResponse = RESPONSE.data_class

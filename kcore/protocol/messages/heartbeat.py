"""Heartbeat (api key 12): keep a group membership alive; versions 0-3.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3
group_instance_id (KIP-345).

Schemas: apache/kafka clients/src/main/resources/common/message/
HeartbeatRequest.json and HeartbeatResponse.json (field names: snake_case of
the JSON names).
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

"""SyncGroup (api key 14): the leader hands out assignments; versions 0-3.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3
group_instance_id (KIP-345). Assignments are opaque bytes to the broker.

Schemas: apache/kafka clients/src/main/resources/common/message/
SyncGroupRequest.json and SyncGroupResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "SyncGroupRequest", api_key=14, flexible="4+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("generation_id", "int32", "0+"),
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "3+", nullable="3+"),
        Field("assignments", "[]SyncGroupRequestAssignment", "0+", fields=[
            Field("member_id", "string", "0+"),
            Field("assignment", "bytes", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "SyncGroupResponse", api_key=14, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0+"),
        Field("assignment", "bytes", "0+"),
    ],
)

SyncGroupRequest = REQUEST.data_class
SyncGroupResponse = RESPONSE.data_class

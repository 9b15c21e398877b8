"""LeaveGroup (api key 13): leave a consumer group; versions 0-3.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3 several
members at once (members with group_instance_id, per-member errors; KIP-345).

Schemas: apache/kafka clients/src/main/resources/common/message/
LeaveGroupRequest.json and LeaveGroupResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "LeaveGroupRequest", api_key=13, flexible="4+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("member_id", "string", "0-2"),
        Field("members", "[]MemberIdentity", "3+", fields=[
            Field("member_id", "string", "3+"),
            Field("group_instance_id", "string", "3+", nullable="3+"),
        ]),
    ],
)

RESPONSE = Message(
    "LeaveGroupResponse", api_key=13, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0+"),
        Field("members", "[]MemberResponse", "3+", fields=[
            Field("member_id", "string", "3+"),
            Field("group_instance_id", "string", "3+", nullable="3+"),
            Field("error_code", "int16", "3+"),
        ]),
    ],
)

LeaveGroupRequest = REQUEST.data_class
LeaveGroupResponse = RESPONSE.data_class

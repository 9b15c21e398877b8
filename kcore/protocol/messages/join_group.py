"""JoinGroup (api key 11): join a consumer group and elect its leader; versions 0-5.

Versions: v1 rebalance_timeout_ms; v2 throttle_time_ms; v3 throttles after
answering; v4 a member without id gets MEMBER_ID_REQUIRED and its id
(KIP-394); v5 group_instance_id for static membership (KIP-345).

Schemas: apache/kafka clients/src/main/resources/common/message/
JoinGroupRequest.json and JoinGroupResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "JoinGroupRequest", api_key=11, flexible="6+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("session_timeout_ms", "int32", "0+"),
        Field("rebalance_timeout_ms", "int32", "1+", default=-1),
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "5+", nullable="5+"),
        Field("protocol_type", "string", "0+"),
        Field("protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
            Field("name", "string", "0+"),
            Field("metadata", "bytes", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "JoinGroupResponse", api_key=11, flexible="6+",
    fields=[
        Field("throttle_time_ms", "int32", "2+"),
        Field("error_code", "int16", "0+"),
        Field("generation_id", "int32", "0+", default=-1),
        Field("protocol_name", "string", "0+"),
        Field("leader", "string", "0+"),
        Field("member_id", "string", "0+"),
        Field("members", "[]JoinGroupResponseMember", "0+", fields=[
            Field("member_id", "string", "0+"),
            Field("group_instance_id", "string", "5+", nullable="5+"),
            Field("metadata", "bytes", "0+"),
        ]),
    ],
)

JoinGroupRequest = REQUEST.data_class
JoinGroupResponse = RESPONSE.data_class

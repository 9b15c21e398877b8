"""DescribeGroups (api key 15): state, protocol and members of groups; versions 0-6.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3
authorized operations (KIP-430); v4 group_instance_id of each member; v5
flexible; v6 error_message, and GROUP_ID_NOT_FOUND for a group that does not
exist or is not a classic group (KIP-1043).

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeGroupsRequest.json and DescribeGroupsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeGroupsRequest", api_key=15, flexible="5+",
    fields=[
        Field("groups", "[]string", "0+"),
        Field("include_authorized_operations", "bool", "3+"),
    ],
)

RESPONSE = Message(
    "DescribeGroupsResponse", api_key=15, flexible="5+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("groups", "[]DescribedGroup", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "6+", nullable="6+", default=None),
            Field("group_id", "string", "0+"),
            Field("group_state", "string", "0+"),
            Field("protocol_type", "string", "0+"),
            Field("protocol_data", "string", "0+"),
            Field("members", "[]DescribedGroupMember", "0+", fields=[
                Field("member_id", "string", "0+"),
                Field("group_instance_id", "string", "4+", nullable="4+"),
                Field("client_id", "string", "0+"),
                Field("client_host", "string", "0+"),
                Field("member_metadata", "bytes", "0+"),
                Field("member_assignment", "bytes", "0+"),
            ]),
            Field("authorized_operations", "int32", "3+", default=-0x80000000),
        ]),
    ],
)

DescribeGroupsRequest = REQUEST.data_class
DescribeGroupsResponse = RESPONSE.data_class

"""ListGroups (api key 16): every group on this coordinator; versions 0-5.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3 flexible;
v4 states_filter and each group's state (KIP-518); v5 types_filter and
each group's type, "classic" or "consumer" (KIP-848).

Schemas: apache/kafka clients/src/main/resources/common/message/
ListGroupsRequest.json and ListGroupsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ListGroupsRequest", api_key=16, flexible="3+",
    fields=[
        Field("states_filter", "[]string", "4+"),
        Field("types_filter", "[]string", "5+"),
    ],
)

RESPONSE = Message(
    "ListGroupsResponse", api_key=16, flexible="3+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "0+"),
        Field("groups", "[]ListedGroup", "0+", fields=[
            Field("group_id", "string", "0+"),
            Field("protocol_type", "string", "0+"),
            Field("group_state", "string", "4+"),
            Field("group_type", "string", "5+"),
        ]),
    ],
)

ListGroupsRequest = REQUEST.data_class
ListGroupsResponse = RESPONSE.data_class

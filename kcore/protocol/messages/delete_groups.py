"""DeleteGroups (api key 42): delete empty consumer groups; versions 0-2.

Versions: v1 throttles after answering; v2 flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteGroupsRequest.json and DeleteGroupsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteGroupsRequest", api_key=42, flexible="2+",
    fields=[
        Field("groups_names", "[]string", "0+"),
    ],
)

RESPONSE = Message(
    "DeleteGroupsResponse", api_key=42, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]DeletableGroupResult", "0+", fields=[
            Field("group_id", "string", "0+"),
            Field("error_code", "int16", "0+"),
        ]),
    ],
)

DeleteGroupsRequest = REQUEST.data_class
DeleteGroupsResponse = RESPONSE.data_class

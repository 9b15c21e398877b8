"""CreateAcls (api key 30): add ACL bindings, one result per creation;
versions 0-3, flexible from 2. Version 0 knows literal patterns only.

Schemas: apache/kafka clients/src/main/resources/common/message/
CreateAclsRequest.json and CreateAclsResponse.json (field names: snake_case
of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "CreateAclsRequest", api_key=30, flexible="2+",
    fields=[
        Field("creations", "[]AclCreation", "0+", fields=[
            Field("resource_type", "int8", "0+"),
            Field("resource_name", "string", "0+"),
            Field("resource_pattern_type", "int8", "1+", default=3),
            Field("principal", "string", "0+"),
            Field("host", "string", "0+"),
            Field("operation", "int8", "0+"),
            Field("permission_type", "int8", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "CreateAclsResponse", api_key=30, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]AclCreationResult", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
        ]),
    ],
)

CreateAclsRequest = REQUEST.data_class
CreateAclsResponse = RESPONSE.data_class

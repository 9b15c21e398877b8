"""DeleteAcls (api key 31): remove the ACLs each filter matches and name
them; versions 0-3, flexible from 2. Version 0 knows literal patterns only.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteAclsRequest.json and DeleteAclsResponse.json (field names: snake_case
of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteAclsRequest", api_key=31, flexible="2+",
    fields=[
        Field("filters", "[]DeleteAclsFilter", "0+", fields=[
            Field("resource_type_filter", "int8", "0+"),
            Field("resource_name_filter", "string", "0+", nullable="0+"),
            Field("pattern_type_filter", "int8", "1+", default=3),
            Field("principal_filter", "string", "0+", nullable="0+"),
            Field("host_filter", "string", "0+", nullable="0+"),
            Field("operation", "int8", "0+"),
            Field("permission_type", "int8", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "DeleteAclsResponse", api_key=31, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("filter_results", "[]DeleteAclsFilterResult", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+"),
            Field("matching_acls", "[]DeleteAclsMatchingAcl", "0+", fields=[
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+"),
                Field("resource_type", "int8", "0+"),
                Field("resource_name", "string", "0+"),
                Field("pattern_type", "int8", "1+", default=3),
                Field("principal", "string", "0+"),
                Field("host", "string", "0+"),
                Field("operation", "int8", "0+"),
                Field("permission_type", "int8", "0+"),
            ]),
        ]),
    ],
)

DeleteAclsRequest = REQUEST.data_class
DeleteAclsResponse = RESPONSE.data_class

"""ApiVersions (api key 18): the version range of every served api; versions 0-3.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3 flexible,
with client_software_name/version in the request and features as tagged
fields (KIP-511). The response header is always v0. An unsupported request
version is answered with a v0 body carrying error 35 and every served key
(frames.api_versions_error_response); kafka-python reads any ApiVersions
body with a non-zero error as v0, so errors must use that format.

Schemas: apache/kafka clients/src/main/resources/common/message/
ApiVersionsRequest.json and ApiVersionsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ApiVersionsRequest", api_key=18, flexible="3+",
    fields=[
        Field("client_software_name", "string", "3+"),
        Field("client_software_version", "string", "3+"),
    ],
)

RESPONSE = Message(
    "ApiVersionsResponse", api_key=18, flexible="3+",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("api_keys", "[]ApiVersion", "0+", fields=[
            Field("api_key", "int16", "0+"),
            Field("min_version", "int16", "0+"),
            Field("max_version", "int16", "0+"),
        ]),
        Field("throttle_time_ms", "int32", "1+"),
        Field("supported_features", "[]SupportedFeatureKey", "3+", tag=0, tagged="3+", fields=[
            Field("name", "string", "3+"),
            Field("min_version", "int16", "3+"),
            Field("max_version", "int16", "3+"),
        ]),
        Field("finalized_features_epoch", "int64", "3+", default=-1, tag=1, tagged="3+"),
        Field("finalized_features", "[]FinalizedFeatureKey", "3+", tag=2, tagged="3+", fields=[
            Field("name", "string", "3+"),
            Field("max_version_level", "int16", "3+"),
            Field("min_version_level", "int16", "3+"),
        ]),
        Field("zk_migration_ready", "bool", "3+", tag=3, tagged="3+"),
    ],
)

ApiVersionsRequest = REQUEST.data_class
ApiVersionsResponse = RESPONSE.data_class

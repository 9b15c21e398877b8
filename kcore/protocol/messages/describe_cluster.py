"""DescribeCluster (api key 60): cluster id, controller and brokers (KIP-700); versions 0-1.

Flexible from v0 (compact strings, tagged fields). v1 endpoint_type
(1 brokers, 2 controllers).

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeClusterRequest.json and DescribeClusterResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeClusterRequest", api_key=60, flexible="0+",
    fields=[
        Field("include_cluster_authorized_operations", "bool", "0+"),
        Field("endpoint_type", "int8", "1+", default=1),
    ],
)

RESPONSE = Message(
    "DescribeClusterResponse", api_key=60, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+"),
        Field("endpoint_type", "int8", "1+", default=1),
        Field("cluster_id", "string", "0+"),
        Field("controller_id", "int32", "0+", default=-1),
        Field("brokers", "[]DescribeClusterBroker", "0+", fields=[
            Field("broker_id", "int32", "0+"),
            Field("host", "string", "0+"),
            Field("port", "int32", "0+"),
            Field("rack", "string", "0+", nullable="0+"),
        ]),
        Field("cluster_authorized_operations", "int32", "0+", default=-0x80000000),
    ],
)

DescribeClusterRequest = REQUEST.data_class
DescribeClusterResponse = RESPONSE.data_class

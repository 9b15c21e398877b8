"""Metadata (api key 3): brokers, topics and partition leaders; versions 0-13.

Versions: v0 an empty topic list means every topic; v1 null means every
topic and adds rack, controller_id, is_internal; v2 cluster_id; v3
throttle_time_ms; v4 allow_auto_topic_creation; v5 offline_replicas; v6
throttles after answering; v7 leader_epoch (KIP-320); v8 authorized
operations (KIP-430); v9 flexible; v10 each topic's topic_id in the
response (KIP-516; the request's topic_id and null names are not to be
used before v12); v11 drops the cluster's authorized operations (KIP-700:
DescribeCluster has them); v12 topics asked for by id, answered with a
null name when the id is unknown; v13 a top-level error_code (KIP-1102).

Schemas: apache/kafka clients/src/main/resources/common/message/
MetadataRequest.json and MetadataResponse.json (field names: snake_case of
the JSON names). ``MetadataResponseDict`` and its parts type the response
a handler builds as dicts.
"""
from __future__ import annotations

import uuid
from typing import TypedDict

from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "MetadataRequest", api_key=3, flexible="9+",
    fields=[
        Field("topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
            Field("topic_id", "uuid", "10+"),
            Field("name", "string", "0+", nullable="10+"),
        ]),
        Field("allow_auto_topic_creation", "bool", "4+", default=True),
        Field("include_cluster_authorized_operations", "bool", "8-10"),
        Field("include_topic_authorized_operations", "bool", "8+"),
    ],
)

RESPONSE = Message(
    "MetadataResponse", api_key=3, flexible="9+",
    fields=[
        Field("throttle_time_ms", "int32", "3+"),
        Field("brokers", "[]MetadataResponseBroker", "0+", fields=[
            Field("node_id", "int32", "0+"),
            Field("host", "string", "0+"),
            Field("port", "int32", "0+"),
            Field("rack", "string", "1+", nullable="1+"),
        ]),
        Field("cluster_id", "string", "2+", nullable="2+"),
        Field("controller_id", "int32", "1+", default=-1),
        Field("topics", "[]MetadataResponseTopic", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("name", "string", "0+", nullable="12+"),
            Field("topic_id", "uuid", "10+"),
            Field("is_internal", "bool", "1+"),
            Field("partitions", "[]MetadataResponsePartition", "0+", fields=[
                Field("error_code", "int16", "0+"),
                Field("partition_index", "int32", "0+"),
                Field("leader_id", "int32", "0+"),
                Field("leader_epoch", "int32", "7+", default=-1),
                Field("replica_nodes", "[]int32", "0+"),
                Field("isr_nodes", "[]int32", "0+"),
                Field("offline_replicas", "[]int32", "5+"),
            ]),
            Field("topic_authorized_operations", "int32", "8+", default=-0x80000000),
        ]),
        Field("cluster_authorized_operations", "int32", "8-10", default=-0x80000000),
        Field("error_code", "int16", "13+"),
    ],
)

MetadataRequest = REQUEST.data_class
MetadataResponse = RESPONSE.data_class


# The response as the handler builds it: dicts that mypy checks key by key
# (fields of every version; tests/unit/test_protocol_typed_bodies.py keeps
# them equal to RESPONSE).
class MetadataResponseBrokerDict(TypedDict, total=False):
    node_id: int
    host: str
    port: int
    rack: str | None


class MetadataResponsePartitionDict(TypedDict, total=False):
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: list[int]


class MetadataResponseTopicDict(TypedDict, total=False):
    error_code: int
    name: str | None
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[MetadataResponsePartitionDict]
    topic_authorized_operations: int


class MetadataResponseDict(TypedDict, total=False):
    throttle_time_ms: int
    brokers: list[MetadataResponseBrokerDict]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponseTopicDict]
    cluster_authorized_operations: int
    error_code: int

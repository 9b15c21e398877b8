"""Produce (api key 0): append record batches to partitions; versions 0-13.

Versions: v1 adds throttle_time_ms to the response; v2 log_append_time_ms
(-1 unless the topic uses LogAppendTime); v3 transactional_id and record
format v2 only (exactly one RecordBatch per partition); v4 may answer
KAFKA_STORAGE_ERROR; v5 log_start_offset; v6 throttles after answering
(KIP-219); v7 allows zstd (KIP-110); v8 adds record_errors and error_message
to the response (KIP-467); v9 flexible; v10 the tagged leader hints of
KIP-951 (current_leader per partition, node_endpoints per answer); v11 may
answer TRANSACTION_ABORTABLE (KIP-890); v12 the same (KIP-890 part 2's
implicit AddPartitionsToTxn needs transaction version 2); v13 topics named
by topic_id, not name (KIP-516). v0-2 are decoded but the handler answers
UNSUPPORTED_VERSION. ``records`` decodes as a memoryview of the request frame.
acks=0 requests get no response at all.

Schemas: apache/kafka clients/src/main/resources/common/message/
ProduceRequest.json and ProduceResponse.json (field names: snake_case of
the JSON names). ``ProduceResponseDict`` and its parts type the response
a handler builds as dicts.
"""
from __future__ import annotations

import uuid
from typing import TypedDict

from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ProduceRequest", api_key=0, flexible="9+",
    fields=[
        Field("transactional_id", "string", "3+", nullable="3+"),
        Field("acks", "int16", "0+"),
        Field("timeout_ms", "int32", "0+"),
        Field("topic_data", "[]TopicProduceData", "0+", fields=[
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_data", "[]PartitionProduceData", "0+", fields=[
                Field("index", "int32", "0+"),
                Field("records", "records", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ProduceResponse", api_key=0, flexible="9+",
    fields=[
        Field("responses", "[]TopicProduceResponse", "0+", fields=[
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_responses", "[]PartitionProduceResponse", "0+", fields=[
                Field("index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("base_offset", "int64", "0+"),
                Field("log_append_time_ms", "int64", "2+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
                Field("record_errors", "[]BatchIndexAndErrorMessage", "8+", fields=[
                    Field("batch_index", "int32", "8+"),
                    Field("batch_index_error_message", "string", "8+", nullable="8+"),
                ]),
                Field("error_message", "string", "8+", nullable="8+"),
                Field("current_leader", "LeaderIdAndEpoch", "10+", tag=0, tagged="10+", fields=[
                    Field("leader_id", "int32", "10+", default=-1),
                    Field("leader_epoch", "int32", "10+", default=-1),
                ]),
            ]),
        ]),
        Field("throttle_time_ms", "int32", "1+"),
        Field("node_endpoints", "[]NodeEndpoint", "10+", tag=0, tagged="10+", fields=[
            Field("node_id", "int32", "10+"),
            Field("host", "string", "10+"),
            Field("port", "int32", "10+"),
            Field("rack", "string", "10+", nullable="10+", default=None),
        ]),
    ],
)

ProduceRequest = REQUEST.data_class
ProduceResponse = RESPONSE.data_class


# The response as the handler builds it: dicts that mypy checks key by key
# (fields of every version; tests/unit/test_protocol_typed_bodies.py keeps
# them equal to RESPONSE).
class BatchIndexAndErrorMessageDict(TypedDict, total=False):
    batch_index: int
    batch_index_error_message: str | None


class LeaderIdAndEpochDict(TypedDict, total=False):
    leader_id: int
    leader_epoch: int


class NodeEndpointDict(TypedDict, total=False):
    node_id: int
    host: str
    port: int
    rack: str | None


class PartitionProduceResponseDict(TypedDict, total=False):
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: list[BatchIndexAndErrorMessageDict]
    error_message: str | None
    current_leader: LeaderIdAndEpochDict


class TopicProduceResponseDict(TypedDict, total=False):
    name: str
    topic_id: uuid.UUID
    partition_responses: list[PartitionProduceResponseDict]


class ProduceResponseDict(TypedDict, total=False):
    responses: list[TopicProduceResponseDict]
    throttle_time_ms: int
    node_endpoints: list[NodeEndpointDict]

"""Fetch (api key 1): read record batches from partitions; versions 4-12.

Versions: v4 isolation_level, last_stable_offset and aborted_transactions
(KIP-98); v5 log_start_offset; v6 may answer KAFKA_STORAGE_ERROR; v7 fetch
sessions (session_id, session_epoch, forgotten_topics_data, top-level
error_code; KIP-227); v8 throttles after answering; v9 current_leader_epoch
(KIP-320); v10 allows zstd; v11 rack_id and preferred_read_replica (KIP-392);
v12 the flexible encoding, last_fetched_epoch and the tagged answers
diverging_epoch (truncation detected on the fetch itself, KIP-595's
change to KIP-320's follower), current_leader and snapshot_id. v13+ name
topics by id (KIP-516).
Response ``records`` may be a file slice (sent by sendfile) or a list of
chunks; replica_id >= 0 marks a follower fetch.

Schemas: apache/kafka clients/src/main/resources/common/message/
FetchRequest.json and FetchResponse.json (field names: snake_case of
the JSON names). ``FetchResponseDict`` and its parts type the response a
handler builds as dicts.
"""
from __future__ import annotations

from typing import Any, TypedDict

from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "FetchRequest", api_key=1, flexible="12+",
    fields=[
        Field("cluster_id", "string", "12+", nullable="12+", default=None, tag=0, tagged="12+"),
        Field("replica_id", "int32", "0+", default=-1),
        Field("max_wait_ms", "int32", "0+"),
        Field("min_bytes", "int32", "0+"),
        Field("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        Field("isolation_level", "int8", "4+"),
        Field("session_id", "int32", "7+"),
        Field("session_epoch", "int32", "7+", default=-1),
        Field("topics", "[]FetchTopic", "0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]FetchPartition", "0+", fields=[
                Field("partition", "int32", "0+"),
                Field("current_leader_epoch", "int32", "9+", default=-1),
                Field("fetch_offset", "int64", "0+"),
                Field("last_fetched_epoch", "int32", "12+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
                Field("partition_max_bytes", "int32", "0+"),
            ]),
        ]),
        Field("forgotten_topics_data", "[]ForgottenTopic", "7+", fields=[
            Field("topic", "string", "7+"),
            Field("partitions", "[]int32", "7+"),
        ]),
        Field("rack_id", "string", "11+", default=""),
    ],
)

RESPONSE = Message(
    "FetchResponse", api_key=1, flexible="12+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "7+"),
        Field("session_id", "int32", "7+"),
        Field("responses", "[]FetchableTopicResponse", "0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("high_watermark", "int64", "0+"),
                Field("last_stable_offset", "int64", "4+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
                Field("diverging_epoch", "EpochEndOffset", "12+", tag=0, tagged="12+", fields=[
                    Field("epoch", "int32", "12+", default=-1),
                    Field("end_offset", "int64", "12+", default=-1),
                ]),
                Field("current_leader", "LeaderIdAndEpoch", "12+", tag=1, tagged="12+", fields=[
                    Field("leader_id", "int32", "12+", default=-1),
                    Field("leader_epoch", "int32", "12+", default=-1),
                ]),
                Field("snapshot_id", "SnapshotId", "12+", tag=2, tagged="12+", fields=[
                    Field("end_offset", "int64", "0+", default=-1),
                    Field("epoch", "int32", "0+", default=-1),
                ]),
                Field("aborted_transactions", "[]AbortedTransaction", "4+", nullable="4+", fields=[
                    Field("producer_id", "int64", "4+"),
                    Field("first_offset", "int64", "4+"),
                ]),
                Field("preferred_read_replica", "int32", "11+", default=-1),
                Field("records", "records", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

FetchRequest = REQUEST.data_class
FetchResponse = RESPONSE.data_class


# The response as the handler builds it: dicts that mypy checks key by key
# (fields of every version; tests/unit/test_protocol_typed_bodies.py keeps
# them equal to RESPONSE).
class EpochEndOffsetDict(TypedDict, total=False):
    epoch: int
    end_offset: int


class LeaderIdAndEpochDict(TypedDict, total=False):
    leader_id: int
    leader_epoch: int


class SnapshotIdDict(TypedDict, total=False):
    end_offset: int
    epoch: int


class AbortedTransactionDict(TypedDict, total=False):
    producer_id: int
    first_offset: int


class PartitionDataDict(TypedDict, total=False):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: EpochEndOffsetDict
    current_leader: LeaderIdAndEpochDict
    snapshot_id: SnapshotIdDict
    aborted_transactions: list[AbortedTransactionDict] | None
    preferred_read_replica: int
    records: Any  # a file slice, a list of them, bytes or None


class FetchableTopicResponseDict(TypedDict, total=False):
    topic: str
    partitions: list[PartitionDataDict]


class FetchResponseDict(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchableTopicResponseDict]

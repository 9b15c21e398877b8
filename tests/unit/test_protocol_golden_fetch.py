"""Golden frames of Fetch v13-v18, spelled field by field from Kafka's
FetchRequest.json / FetchResponse.json: topics by id (v13), the tagged
replica_state (v15), node_endpoints (v16), the partition's tagged
replica_directory_id (v17) and high_watermark (v18)."""
from __future__ import annotations

import uuid

from kcore.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response, to_dict
from tests.support.protocol_bytes import NO_TAGS, compact_string, framed, i8, i16, i32, i64, request_header_v1

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
DIRECTORY_ID = uuid.UUID("00000000-0000-0000-0000-0000000000d1")

FETCH_V18_REQUEST = framed(
    request_header_v1(1, 18, 30, "rdkafka"), NO_TAGS,
    i32(500), i32(1), i32(52428800), i8(1),                    # no replica_id from v15; isolation read_committed
    i32(0), i32(-1),                                           # session_id, session_epoch
    bytes([2]), TOPIC_ID.bytes,                                # one topic, by id
    bytes([2]), i32(0), i32(5), i64(42), i32(4), i64(-1), i32(1048576),
    bytes([2]),                                                # the partition's two tagged fields:
    bytes([0, 16]), DIRECTORY_ID.bytes,                        # tag 0 replica_directory_id
    bytes([1, 8]), i64(40),                                    # tag 1 high_watermark
    NO_TAGS,                                                   # the topic's tags
    bytes([1]),                                                # no forgotten topics
    compact_string("rack-b"),
    bytes([1]), bytes([1, 13]), i32(3), i64(9), NO_TAGS,       # tag 1 replica_state: replica 3, epoch 9
)

FETCH_V16_RESPONSE = framed(
    i32(30), NO_TAGS,
    i32(0), i16(0), i32(0),                                    # throttle, error, session_id
    bytes([2]), TOPIC_ID.bytes,                                # one topic, by id
    bytes([2]), i32(0), i16(6), i64(-1), i64(-1), i64(-1),     # NOT_LEADER_OR_FOLLOWER
    bytes([0]), i32(-1), bytes([1]),                           # aborted null, no preferred replica, no records
    bytes([1]), bytes([1, 9]), i32(2), i32(7), NO_TAGS,        # tag 1 current_leader: 2 at epoch 7
    NO_TAGS,
    bytes([1]), bytes([0, 14]),                                # tag 0 node_endpoints (14 bytes)
    bytes([2]), i32(2), compact_string("b2"), i32(9093), bytes([0]), NO_TAGS,  # node 2, rack null
)


def test_fetch_v18_request_names_topics_by_id_with_the_replica_state_and_the_partition_tags():
    request = decode_request(memoryview(FETCH_V18_REQUEST)[4:])
    body = request.body
    (topic,) = body.topics
    (partition,) = topic.partitions
    assert (topic.topic_id, partition.fetch_offset, partition.last_fetched_epoch) == (TOPIC_ID, 42, 4)
    assert (partition.replica_directory_id, partition.high_watermark) == (DIRECTORY_ID, 40)
    assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (3, 9)
    assert encode_request(1, 18, 30, "rdkafka", to_dict(body)) == FETCH_V18_REQUEST
    # v17 has no high_watermark: the partition keeps one tagged field.
    assert len(encode_request(1, 17, 30, "rdkafka", to_dict(body))) == len(FETCH_V18_REQUEST) - 10


def test_fetch_v18_high_watermark_defaults_to_int64_max_when_not_sent():
    body = {"max_wait_ms": 0, "min_bytes": 1, "topics": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}]}]}
    frame = encode_request(1, 18, 1, "c", body)
    partition = decode_request(memoryview(frame)[4:]).body.topics[0].partitions[0]
    assert partition.high_watermark == 0x7FFFFFFFFFFFFFFF
    assert decode_request(memoryview(frame)[4:]).body.replica_state.replica_id == -1


def test_fetch_v16_response_answers_by_id_with_leader_hints():
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "ignored from v13", "topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 0, "error_code": 6, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1,
            "records": b"", "current_leader": {"leader_id": 2, "leader_epoch": 7}}]}],
        "node_endpoints": [{"node_id": 2, "host": "b2", "port": 9093, "rack": None}]}
    frame = b"".join(encode_response(RequestHeader(1, 16, 30, "rdkafka"), body))
    assert frame == FETCH_V16_RESPONSE
    _, decoded = decode_response(1, 16, frame[4:])
    assert decoded.responses[0].topic_id == TOPIC_ID
    assert [(n.node_id, n.host, n.port) for n in decoded.node_endpoints] == [(2, "b2", 9093)]
    # v15 has no node_endpoints: the same answer with an empty top-level tag section.
    v15 = b"".join(encode_response(RequestHeader(1, 15, 30, "rdkafka"), body))
    assert len(v15) == len(frame) - 16

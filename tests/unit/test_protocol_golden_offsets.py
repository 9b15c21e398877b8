"""Golden frames of OffsetCommit v10 and OffsetFetch v10, spelled field by
field from Kafka's OffsetCommitRequest.json / OffsetCommitResponse.json and
OffsetFetchRequest.json / OffsetFetchResponse.json: from v10 a topic is
named by its 16-byte topic_id and carries no name."""
from __future__ import annotations

import uuid

from kcore.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response, to_dict
from tests.support.protocol_bytes import NO_TAGS, compact_string, framed, i8, i16, i32, i64, request_header_v1

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")

OFFSET_COMMIT_V10_REQUEST = framed(
    request_header_v1(8, 10, 7, "rdkafka"), NO_TAGS,
    compact_string("g1"), i32(3), compact_string("m-1"),      # group, member epoch, member id
    bytes([0]),                                                # group_instance_id null
    bytes([2]), TOPIC_ID.bytes,                                # one topic, by id
    bytes([2]), i32(1), i64(42), i32(5), compact_string("md"), NO_TAGS,
    NO_TAGS,                                                   # the topic's tags
    NO_TAGS,
)

OFFSET_COMMIT_V10_RESPONSE = framed(
    i32(7), NO_TAGS,
    i32(0),                                                    # throttle_time_ms
    bytes([2]), TOPIC_ID.bytes,
    bytes([2]), i32(1), i16(100), NO_TAGS,                     # UNKNOWN_TOPIC_ID
    NO_TAGS, NO_TAGS,
)

OFFSET_FETCH_V10_REQUEST = framed(
    request_header_v1(9, 10, 8, "rdkafka"), NO_TAGS,
    bytes([2]), compact_string("g1"),                          # one group
    compact_string("m-1"), i32(3),                             # member id, member epoch
    bytes([2]), TOPIC_ID.bytes, bytes([3]), i32(0), i32(1),    # one topic by id, partitions 0 and 1
    NO_TAGS, NO_TAGS,
    i8(1),                                                     # require_stable
    NO_TAGS,
)

OFFSET_FETCH_V10_RESPONSE = framed(
    i32(8), NO_TAGS,
    i32(0),
    bytes([2]), compact_string("g1"),
    bytes([2]), TOPIC_ID.bytes,
    bytes([2]), i32(0), i64(42), i32(5), compact_string("md"), i16(0), NO_TAGS,
    NO_TAGS,
    i16(0), NO_TAGS,                                           # the group's error code
    NO_TAGS,
)


def test_offset_commit_v10_request_names_topics_by_id():
    body = decode_request(memoryview(OFFSET_COMMIT_V10_REQUEST)[4:]).body
    (topic,) = body.topics
    (partition,) = topic.partitions
    assert (body.group_id, body.generation_id_or_member_epoch, body.member_id) == ("g1", 3, "m-1")
    assert (topic.topic_id, partition.partition_index, partition.committed_offset) == (TOPIC_ID, 1, 42)
    assert (partition.committed_leader_epoch, partition.committed_metadata) == (5, "md")
    assert encode_request(8, 10, 7, "rdkafka", to_dict(body)) == OFFSET_COMMIT_V10_REQUEST
    # v9 writes the name (an empty compact string, one byte) instead of the 16-byte id.
    assert len(encode_request(8, 9, 7, "rdkafka", to_dict(body))) == len(OFFSET_COMMIT_V10_REQUEST) - 15


def test_offset_commit_v10_response_answers_by_id():
    body = {"throttle_time_ms": 0, "topics": [{"name": "ignored from v10", "topic_id": TOPIC_ID,
                                               "partitions": [{"partition_index": 1, "error_code": 100}]}]}
    frame = b"".join(encode_response(RequestHeader(8, 10, 7, "rdkafka"), body))
    assert frame == OFFSET_COMMIT_V10_RESPONSE
    _, decoded = decode_response(8, 10, frame[4:])
    assert decoded.topics[0].topic_id == TOPIC_ID
    assert decoded.topics[0].partitions[0].error_code == 100


def test_offset_fetch_v10_request_names_each_groups_topics_by_id():
    body = decode_request(memoryview(OFFSET_FETCH_V10_REQUEST)[4:]).body
    (group,) = body.groups
    (topic,) = group.topics
    assert (group.group_id, group.member_id, group.member_epoch) == ("g1", "m-1", 3)
    assert (topic.topic_id, topic.partition_indexes, body.require_stable) == (TOPIC_ID, [0, 1], True)
    assert encode_request(9, 10, 8, "rdkafka", to_dict(body)) == OFFSET_FETCH_V10_REQUEST


def test_offset_fetch_v10_response_answers_by_id():
    body = {"throttle_time_ms": 0, "groups": [{"group_id": "g1", "error_code": 0, "topics": [
        {"name": "ignored from v10", "topic_id": TOPIC_ID, "partitions": [
            {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 5,
             "metadata": "md", "error_code": 0}]}]}]}
    frame = b"".join(encode_response(RequestHeader(9, 10, 8, "rdkafka"), body))
    assert frame == OFFSET_FETCH_V10_RESPONSE
    _, decoded = decode_response(9, 10, frame[4:])
    assert decoded.groups[0].topics[0].topic_id == TOPIC_ID
    # v9 names the topic instead: the name's compact string replaces the 16-byte id.
    v9 = b"".join(encode_response(RequestHeader(9, 9, 8, "rdkafka"), body))
    assert len(v9) == len(frame) - 16 + len(compact_string("ignored from v10"))

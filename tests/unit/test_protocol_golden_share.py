"""Golden frames of the share-group APIs (KIP-932) written byte by byte
from Kafka 4.2's message specs: ShareGroupHeartbeat v1 (the version
librdkafka 2.16 sends), ShareFetch v1 with an acknowledgement and a
response with acquired records, ShareAcknowledge v2's renew flag."""
from __future__ import annotations

import uuid

from kcore.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response, to_dict
from tests.support.protocol_bytes import NO_TAGS, compact_string, framed, i8, i16, i32, i64, request_header_v1

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")

SHARE_GROUP_HEARTBEAT_V1_REQUEST = framed(
    request_header_v1(76, 1, 5, "rdkafka"), NO_TAGS,           # header v2
    compact_string("g"), compact_string("m-1"), i32(0),        # group, member, epoch 0 (join)
    b"\x00",                                                   # rack_id null
    bytes([2]), compact_string("t"),                           # subscribed_topic_names ["t"]
    NO_TAGS,
)

SHARE_GROUP_HEARTBEAT_V1_RESPONSE = framed(
    i32(5), NO_TAGS,                                           # response header v1
    i32(0), i16(0), b"\x00",                                   # throttle, error, message null
    compact_string("m-1"), i32(1), i32(5000),                  # member, epoch, heartbeat interval
    b"\x01",                                                   # assignment present
    bytes([2]), TOPIC_ID.bytes, bytes([2]), i32(0), NO_TAGS,   # topic_partitions: TOPIC_ID [0]
    NO_TAGS,                                                   # Assignment's tags
    NO_TAGS,
)

SHARE_FETCH_V1_REQUEST = framed(
    request_header_v1(78, 1, 6, "rdkafka"), NO_TAGS,
    compact_string("g"), compact_string("m-1"), i32(2),        # group, member, session epoch 2
    i32(500), i32(1), i32(52428800), i32(500), i32(500),       # max_wait, min_bytes, max_bytes, max_records, batch_size
    bytes([2]), TOPIC_ID.bytes,                                # one topic
    bytes([2]), i32(0),                                        # partition 0
    bytes([2]), i64(3) + i64(4) + bytes([2]) + i8(1) + NO_TAGS,  # ack 3-4 ACCEPT
    NO_TAGS, NO_TAGS,
    bytes([1]),                                                # forgotten_topics_data: none
    NO_TAGS,
)

SHARE_FETCH_V1_RESPONSE = framed(
    i32(6), NO_TAGS,
    i32(0), i16(0), b"\x00", i32(30000),                       # throttle, error, message, lock timeout
    bytes([2]), TOPIC_ID.bytes,
    bytes([2]), i32(0), i16(0), b"\x00", i16(0), b"\x00",      # partition 0, no errors
    i32(1) + i32(7) + NO_TAGS,                                 # current leader 1, epoch 7
    bytes([4]) + b"abc",                                       # records (3 bytes, compact)
    bytes([2]), i64(5) + i64(9) + i16(1) + NO_TAGS,            # acquired 5-9, delivery count 1
    NO_TAGS, NO_TAGS,
    bytes([1]),                                                # node_endpoints: none
    NO_TAGS,
)

SHARE_ACKNOWLEDGE_V2_REQUEST = framed(
    request_header_v1(79, 2, 7, "rdkafka"), NO_TAGS,
    compact_string("g"), compact_string("m-1"), i32(3), i8(1),  # session epoch 3, is_renew_ack
    bytes([2]), TOPIC_ID.bytes, bytes([2]), i32(0),
    bytes([2]), i64(5) + i64(9) + bytes([2]) + i8(4) + NO_TAGS,  # renew 5-9
    NO_TAGS, NO_TAGS, NO_TAGS,
)


def test_share_group_heartbeat_v1_frames():
    request = decode_request(memoryview(SHARE_GROUP_HEARTBEAT_V1_REQUEST)[4:])
    assert request.header == RequestHeader(76, 1, 5, "rdkafka")
    body = to_dict(request.body)
    assert body == {"group_id": "g", "member_id": "m-1", "member_epoch": 0, "rack_id": None,
                    "subscribed_topic_names": ["t"]}
    assert encode_request(76, 1, 5, "rdkafka", body) == SHARE_GROUP_HEARTBEAT_V1_REQUEST
    response = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m-1",
                "member_epoch": 1, "heartbeat_interval_ms": 5000,
                "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0]}]}}
    assert b"".join(encode_response(request.header, response)) == SHARE_GROUP_HEARTBEAT_V1_RESPONSE


def test_share_fetch_v1_frames_with_an_acknowledgement_and_acquired_records():
    request = decode_request(memoryview(SHARE_FETCH_V1_REQUEST)[4:])
    body = to_dict(request.body)
    assert body["topics"] == [{"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0, "partition_max_bytes": 0,
                               "acknowledgement_batches": [{"first_offset": 3, "last_offset": 4,
                                                            "acknowledge_types": [1]}]}]}]
    assert (body["max_records"], body["batch_size"]) == (500, 500)
    assert encode_request(78, 1, 6, "rdkafka", body) == SHARE_FETCH_V1_REQUEST
    response = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "acquisition_lock_timeout_ms": 30000, "responses": [{"topic_id": TOPIC_ID, "partitions": [{
                    "partition_index": 0, "error_code": 0, "error_message": None, "acknowledge_error_code": 0,
                    "acknowledge_error_message": None, "current_leader": {"leader_id": 1, "leader_epoch": 7},
                    "records": b"abc", "acquired_records": [
                        {"first_offset": 5, "last_offset": 9, "delivery_count": 1}]}]}],
                "node_endpoints": []}
    assert b"".join(encode_response(request.header, response)) == SHARE_FETCH_V1_RESPONSE
    correlation_id, decoded = decode_response(78, 1, SHARE_FETCH_V1_RESPONSE[4:])
    assert correlation_id == 6
    assert decoded.responses[0].partitions[0].acquired_records[0].last_offset == 9


def test_share_acknowledge_v2_carries_the_renew_flag():
    request = decode_request(memoryview(SHARE_ACKNOWLEDGE_V2_REQUEST)[4:])
    body = to_dict(request.body)
    assert body["is_renew_ack"] is True and body["share_session_epoch"] == 3
    assert encode_request(79, 2, 7, "rdkafka", body) == SHARE_ACKNOWLEDGE_V2_REQUEST

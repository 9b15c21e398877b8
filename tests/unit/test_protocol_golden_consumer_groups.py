"""Golden frames of ConsumerGroupHeartbeat and ConsumerGroupDescribe,
written field by field from Kafka's message specs (every version flexible:
compact strings and arrays, tagged fields, a nullable struct as an int8
marker -1 or 1 before its fields)."""
from __future__ import annotations

import uuid

from kcore.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response, to_dict
from tests.support.protocol_bytes import NO_TAGS, compact_string, framed, i8, i16, i32, request_header_v1

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
NULL = b"\x00"   # compact nullable string or array: length 0 means null

HEARTBEAT_V1_REQUEST = framed(
    request_header_v1(68, 1, 5, "rdkafka"), NO_TAGS,          # header v2
    compact_string("g"), compact_string("m"), i32(0),          # group_id, member_id, member_epoch
    NULL, NULL,                                                # instance_id, rack_id: null
    i32(300000),                                               # rebalance_timeout_ms
    bytes([2]), compact_string("t"),                           # subscribed_topic_names ["t"]
    NULL,                                                      # subscribed_topic_regex (v1+): null
    compact_string("uniform"),                                 # server_assignor
    bytes([1]),                                                # topic_partitions: empty
    NO_TAGS,
)

HEARTBEAT_V1_RESPONSE = framed(
    i32(5), NO_TAGS,                                           # response header v1
    i32(0), i16(0), NULL,                                      # throttle, error_code, error_message null
    compact_string("m"), i32(1), i32(5000),                    # member_id, member_epoch, heartbeat_interval_ms
    i8(1),                                                     # assignment present
    bytes([2]), TOPIC_ID.bytes, bytes([3]), i32(0), i32(1), NO_TAGS,  # one topic: partitions [0, 1]
    NO_TAGS,                                                   # assignment's tags
    NO_TAGS,
)

HEARTBEAT_V0_RESPONSE_WITHOUT_ASSIGNMENT = framed(
    i32(6), NO_TAGS,
    i32(0), i16(110), compact_string("fenced"),                # FENCED_MEMBER_EPOCH with a message
    NULL, i32(0), i32(0),                                      # member_id null
    i8(-1),                                                    # assignment: null
    NO_TAGS,
)

DESCRIBE_V1_RESPONSE_MEMBER_TYPE = framed(
    i32(9), NO_TAGS,
    i32(0),                                                    # throttle
    bytes([2]),                                                # one group
    i16(0), NULL, compact_string("g"), compact_string("Stable"),
    i32(3), i32(3), compact_string("uniform"),                 # epochs, assignor
    bytes([2]),                                                # one member
    compact_string("m"), NULL, NULL, i32(3),                   # member_id, instance, rack, member_epoch
    compact_string("c"), compact_string("/h"),                 # client id, host
    bytes([2]), compact_string("t"), NULL,                     # subscribed names ["t"], regex null
    bytes([2]), TOPIC_ID.bytes, compact_string("t"), bytes([2]), i32(0), NO_TAGS, NO_TAGS,  # assignment
    bytes([1]), NO_TAGS,                                       # target assignment: empty
    i8(1),                                                     # member_type (v1): consumer protocol
    NO_TAGS,
    i32(-(2**31)), NO_TAGS,                                    # authorized_operations, group tags
    NO_TAGS,
)


def test_heartbeat_v1_request_bytes():
    request = decode_request(memoryview(HEARTBEAT_V1_REQUEST)[4:])
    assert request.header == RequestHeader(68, 1, 5, "rdkafka")
    body = {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
            "server_assignor": "uniform", "topic_partitions": []}
    assert to_dict(request.body) == body
    assert encode_request(68, 1, 5, "rdkafka", body) == HEARTBEAT_V1_REQUEST


def test_heartbeat_v1_response_with_an_assignment_bytes():
    body = {"member_id": "m", "member_epoch": 1, "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 1]}]}}
    assert b"".join(encode_response(RequestHeader(68, 1, 5, "rdkafka"), body)) == HEARTBEAT_V1_RESPONSE
    _, decoded = decode_response(68, 1, HEARTBEAT_V1_RESPONSE[4:])
    assert decoded.assignment.topic_partitions[0].topic_id == TOPIC_ID


def test_heartbeat_v0_error_response_has_a_null_assignment():
    body = {"error_code": 110, "error_message": "fenced", "member_id": None}
    encoded = b"".join(encode_response(RequestHeader(68, 0, 6, "x"), body))
    assert encoded == HEARTBEAT_V0_RESPONSE_WITHOUT_ASSIGNMENT
    assert decode_response(68, 0, encoded[4:])[1].assignment is None


def test_describe_v1_response_carries_the_member_type():
    member = {"member_id": "m", "member_epoch": 3, "client_id": "c", "client_host": "/h",
              "subscribed_topic_names": ["t"],
              "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "topic_name": "t", "partitions": [0]}]},
              "target_assignment": {"topic_partitions": []}, "member_type": 1}
    body = {"groups": [{"group_id": "g", "group_state": "Stable", "group_epoch": 3, "assignment_epoch": 3,
                        "assignor_name": "uniform", "members": [member]}]}
    assert b"".join(encode_response(RequestHeader(69, 1, 9, "x"), body)) == DESCRIBE_V1_RESPONSE_MEMBER_TYPE
    v0 = b"".join(encode_response(RequestHeader(69, 0, 9, "x"), body))
    assert len(v0) == len(DESCRIBE_V1_RESPONSE_MEMBER_TYPE) - 1     # v0 has no member_type byte

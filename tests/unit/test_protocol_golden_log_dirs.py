"""Golden frames of DescribeLogDirs (35) and AlterReplicaLogDirs (34),
written byte by byte from Kafka's message specs (DescribeLogDirsRequest.json
etc.): v1 with int16-length strings and int32-length arrays, v2+ flexible
(compact lengths + 1, a tag buffer after every struct), DescribeLogDirs v3's
top-level error_code, v4's total_bytes / usable_bytes, v5's is_cordoned."""
from __future__ import annotations

from kcore.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response
from tests.support.protocol_bytes import (
    NO_TAGS,
    NULL_ARRAY,
    compact_string,
    framed,
    i8,
    i16,
    i32,
    i64,
    request_header_v1,
    string,
)

DIR = "/data/a"

DESCRIBE_V1_ALL_REQUEST = framed(request_header_v1(35, 1, 5, "adminclient-1"), NULL_ARRAY)

DESCRIBE_V1_SOME_REQUEST = framed(
    request_header_v1(35, 1, 6, "adminclient-1"),
    i32(1), string("orders"), i32(2) + i32(0) + i32(3),        # orders partitions [0, 3]
)

DESCRIBE_V1_RESPONSE = framed(
    i32(6),                                                    # header v0
    i32(0),                                                    # throttle_time_ms
    i32(1), i16(0) + string(DIR),                              # one result: error, log_dir
    i32(1), string("orders"),                                  # topics
    i32(1), i32(3) + i64(4096) + i64(2) + i8(1),               # partition 3: size, lag, future
)

DESCRIBE_V4_ALL_REQUEST = framed(
    request_header_v1(35, 4, 7, "rdkafka"), NO_TAGS,           # header v2
    b"\x00", NO_TAGS,                                          # compact null topics
)

DESCRIBE_V4_RESPONSE = framed(
    i32(7), NO_TAGS,                                           # header v1
    i32(0), i16(0),                                            # throttle, error_code (v3+)
    bytes([2]), i16(0) + compact_string(DIR),                  # one result
    bytes([2]), compact_string("orders"),                      # one topic
    bytes([2]), i32(0) + i64(100) + i64(0) + i8(0) + NO_TAGS,  # partition 0
    NO_TAGS,                                                   # end of the topic
    i64(1 << 30) + i64(1 << 29), NO_TAGS,                      # total_bytes, usable_bytes
    NO_TAGS,                                                   # end of the body
)

DESCRIBE_V5_DENIED_RESPONSE = framed(
    i32(8), NO_TAGS,
    i32(0), i16(31),                                           # CLUSTER_AUTHORIZATION_FAILED
    bytes([1]),                                                # no results
    NO_TAGS,
)

DESCRIBE_V5_OFFLINE_RESPONSE = framed(
    i32(9), NO_TAGS,
    i32(0), i16(0),
    bytes([2]), i16(56) + compact_string(DIR),                 # KAFKA_STORAGE_ERROR
    bytes([1]),                                                # no topics
    i64(-1) + i64(-1) + i8(0), NO_TAGS,                        # sizes unknown, not cordoned
    NO_TAGS,
)

ALTER_V1_REQUEST = framed(
    request_header_v1(34, 1, 11, "adminclient-1"),
    i32(1), string(DIR),                                       # one destination dir
    i32(1), string("orders"), i32(1) + i32(2),                 # orders partition 2
)

ALTER_V2_REQUEST = framed(
    request_header_v1(34, 2, 12, "adminclient-1"), NO_TAGS,
    bytes([2]), compact_string(DIR),
    bytes([2]), compact_string("orders"), bytes([2]) + i32(2), NO_TAGS,  # partition 2
    NO_TAGS,                                                   # end of the dir
    NO_TAGS,
)

ALTER_V1_RESPONSE = framed(
    i32(11),
    i32(0),
    i32(1), string("orders"),
    i32(2), i32(1) + i16(0), i32(2) + i16(57),                 # 2: LOG_DIR_NOT_FOUND
)

ALTER_V2_RESPONSE = framed(
    i32(12), NO_TAGS,
    i32(0),
    bytes([2]), compact_string("orders"),
    bytes([2]), i32(2) + i16(9) + NO_TAGS,                     # REPLICA_NOT_AVAILABLE
    NO_TAGS,
    NO_TAGS,
)


def _response(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    return b"".join(encode_response(RequestHeader(api_key, version, correlation_id, "x"), body))


def test_describe_log_dirs_v1_requests_for_all_and_for_named_partitions():
    assert decode_request(memoryview(DESCRIBE_V1_ALL_REQUEST)[4:]).body.topics is None
    named = decode_request(memoryview(DESCRIBE_V1_SOME_REQUEST)[4:]).body.topics
    assert [(t.topic, t.partitions) for t in named] == [("orders", [0, 3])]
    assert encode_request(35, 1, 5, "adminclient-1", {"topics": None}) == DESCRIBE_V1_ALL_REQUEST
    assert encode_request(35, 1, 6, "adminclient-1", {"topics": [
        {"topic": "orders", "partitions": [0, 3]}]}) == DESCRIBE_V1_SOME_REQUEST


def test_describe_log_dirs_v1_response_bytes():
    body = {"results": [{"log_dir": DIR, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 3, "partition_size": 4096, "offset_lag": 2, "is_future_key": True}]}]}]}
    assert _response(35, 1, 6, body) == DESCRIBE_V1_RESPONSE
    _, decoded = decode_response(35, 1, DESCRIBE_V1_RESPONSE[4:])
    assert decoded.results[0].topics[0].partitions[0].is_future_key is True


def test_describe_log_dirs_v4_is_flexible_with_volume_sizes():
    assert decode_request(memoryview(DESCRIBE_V4_ALL_REQUEST)[4:]).body.topics is None
    assert encode_request(35, 4, 7, "rdkafka", {"topics": None}) == DESCRIBE_V4_ALL_REQUEST
    body = {"results": [{"log_dir": DIR, "total_bytes": 1 << 30, "usable_bytes": 1 << 29,
                         "topics": [{"name": "orders", "partitions": [
                             {"partition_index": 0, "partition_size": 100}]}]}]}
    assert _response(35, 4, 7, body) == DESCRIBE_V4_RESPONSE
    _, decoded = decode_response(35, 4, DESCRIBE_V4_RESPONSE[4:])
    assert (decoded.results[0].total_bytes, decoded.results[0].usable_bytes) == (1 << 30, 1 << 29)


def test_describe_log_dirs_v5_refusal_and_offline_dir():
    assert _response(35, 5, 8, {"error_code": 31, "results": []}) == DESCRIBE_V5_DENIED_RESPONSE
    offline = {"results": [{"error_code": 56, "log_dir": DIR, "topics": []}]}
    assert _response(35, 5, 9, offline) == DESCRIBE_V5_OFFLINE_RESPONSE
    _, decoded = decode_response(35, 5, DESCRIBE_V5_OFFLINE_RESPONSE[4:])
    assert (decoded.results[0].total_bytes, decoded.results[0].is_cordoned) == (-1, False)


def test_alter_replica_log_dirs_requests_v1_and_v2():
    body = {"dirs": [{"path": DIR, "topics": [{"name": "orders", "partitions": [2]}]}]}
    assert encode_request(34, 1, 11, "adminclient-1", body) == ALTER_V1_REQUEST
    assert encode_request(34, 2, 12, "adminclient-1", body) == ALTER_V2_REQUEST
    for frame in (ALTER_V1_REQUEST, ALTER_V2_REQUEST):
        dirs = decode_request(memoryview(frame)[4:]).body.dirs
        assert [(d.path, [(t.name, t.partitions) for t in d.topics]) for d in dirs] == \
            [(DIR, [("orders", [2])])]


def test_alter_replica_log_dirs_responses_v1_and_v2():
    v1 = {"results": [{"topic_name": "orders", "partitions": [
        {"partition_index": 1, "error_code": 0}, {"partition_index": 2, "error_code": 57}]}]}
    assert _response(34, 1, 11, v1) == ALTER_V1_RESPONSE
    v2 = {"results": [{"topic_name": "orders", "partitions": [
        {"partition_index": 2, "error_code": 9}]}]}
    assert _response(34, 2, 12, v2) == ALTER_V2_RESPONSE
    _, decoded = decode_response(34, 2, ALTER_V2_RESPONSE[4:])
    assert decoded.results[0].partitions[0].error_code == 9

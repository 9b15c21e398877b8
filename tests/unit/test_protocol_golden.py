"""Golden frames written byte by byte from Kafka's protocol guide and message specs.

Each expected frame is spelled out field by field (size prefix, header,
body) so a reader can check it against the spec without running anything.
"""
from __future__ import annotations

import uuid

from kcore.protocol import (
    ApiKey,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_request_header,
    to_dict,
)
from tests.support.protocol_bytes import (
    NO_TAGS,
    NULL_ARRAY,
    NULL_STRING,
    compact_string,
    framed,
    i8,
    i16,
    i32,
    i64,
    request_header_v1,
    string,
)

API_VERSIONS_V0_REQUEST = framed(request_header_v1(18, 0, 1, "kcat"))

API_VERSIONS_V3_REQUEST = framed(
    request_header_v1(18, 3, 7, "rdkafka"), NO_TAGS,           # header v2: client id keeps int16 length
    compact_string("librdkafka"), compact_string("2.3.0"), NO_TAGS,
)

API_VERSIONS_V0_RESPONSE = framed(
    i32(1),                                                    # header v0
    i16(0),                                                    # error_code
    i32(2), i16(0) + i16(0) + i16(7), i16(18) + i16(0) + i16(3),  # api_keys
)

API_VERSIONS_V3_RESPONSE = framed(
    i32(7),                                                    # header v0 even though the body is flexible
    i16(0),                                                    # error_code
    bytes([2]), i16(18) + i16(0) + i16(3), NO_TAGS,            # compact api_keys (1 entry + 1)
    i32(0),                                                    # throttle_time_ms
    bytes([1]), bytes([1]), bytes([8]), i64(5),                # tag 1 finalized_features_epoch = 5
)

METADATA_V1_REQUEST = framed(request_header_v1(3, 1, 2, "kafka-python"), i32(1), string("foo"))
METADATA_V1_ALL_TOPICS_REQUEST = framed(request_header_v1(3, 1, 3, "kafka-python"), NULL_ARRAY)

METADATA_V1_RESPONSE = framed(
    i32(2),
    i32(1), i32(1) + string("localhost") + i32(9092) + NULL_STRING,  # brokers: node 1, rack null
    i32(1),                                                    # controller_id
    i32(1),                                                    # topics
    i16(0) + string("foo") + i8(0),                            # error, name, is_internal
    i32(1), i16(0) + i32(0) + i32(1),                          # partition 0, leader 1
    i32(1) + i32(1),                                           # replica_nodes [1]
    i32(1) + i32(1),                                           # isr_nodes [1]
)

PRODUCE_V3_REQUEST = framed(
    request_header_v1(0, 3, 9, "rdkafka"),
    NULL_STRING,                                               # transactional_id
    i16(-1), i32(30000),                                       # acks=all, timeout_ms
    i32(1), string("foo"),
    i32(1), i32(0), i32(5) + b"hello",                         # partition 0, 5 record bytes
)

PRODUCE_V3_RESPONSE = framed(
    i32(9),
    i32(1), string("foo"),
    i32(1), i32(0) + i16(0) + i64(42) + i64(-1),               # index, error, base_offset, log_append_time
    i32(0),                                                    # throttle_time_ms
)

DESCRIBE_CLUSTER_V0_RESPONSE = framed(
    i32(4), NO_TAGS,                                           # response header v1
    i32(0), i16(0), b"\x00",                                   # throttle, error, error_message null
    compact_string("kc-1"), i32(1),                            # cluster_id, controller_id
    bytes([2]), i32(1) + compact_string("h") + i32(9092) + b"\x00" + NO_TAGS,  # one broker, rack null
    i32(-(2**31)), NO_TAGS,                                    # cluster_authorized_operations
)

DELETE_RECORDS_V0_REQUEST = framed(
    request_header_v1(21, 0, 11, "adminclient-1"),
    i32(1), string("foo"),                                     # topics: one
    i32(2), i32(0) + i64(3), i32(1) + i64(-1),                 # partition 0 to 3, 1 to the HW
    i32(30000),                                                # timeout_ms
)

DELETE_RECORDS_V0_RESPONSE = framed(
    i32(11),                                                   # header v0
    i32(0),                                                    # throttle_time_ms
    i32(1), string("foo"),
    i32(2), i32(0) + i64(3) + i16(0),                          # index, low_watermark, error_code
    i32(1) + i64(-1) + i16(1),                                 # OFFSET_OUT_OF_RANGE, no low watermark
)

DELETE_RECORDS_V2_REQUEST = framed(
    request_header_v1(21, 2, 12, "rdkafka"), NO_TAGS,          # header v2
    bytes([2]), compact_string("foo"),                         # compact topics (1 entry + 1)
    bytes([2]), i32(0) + i64(7) + NO_TAGS, NO_TAGS,            # one partition to offset 7
    i32(60000), NO_TAGS,                                       # timeout_ms
)

DELETE_RECORDS_V2_RESPONSE = framed(
    i32(12), NO_TAGS,                                          # response header v1
    i32(0),                                                    # throttle_time_ms
    bytes([2]), compact_string("foo"),
    bytes([2]), i32(0) + i64(7) + i16(0) + NO_TAGS, NO_TAGS,
    NO_TAGS,
)

FETCH_V12_REQUEST = framed(
    request_header_v1(1, 12, 21, "rdkafka"), NO_TAGS,          # header v2
    i32(-1), i32(500), i32(1), i32(52428800),                  # replica_id, max_wait, min/max bytes
    i8(1), i32(0), i32(-1),                                    # read_committed, no session
    bytes([2]), compact_string("foo"),                         # topics: one
    bytes([2]), i32(0) + i32(3) + i64(42),                     # partition 0, leader epoch 3, offset 42
    i32(3) + i64(-1) + i32(1048576) + NO_TAGS,                 # last_fetched_epoch 3, log start, max
    NO_TAGS,                                                   # end of the topic
    bytes([1]),                                                # forgotten_topics_data: none
    compact_string("rack-b"),                                  # rack_id
    b"\x01", b"\x00", bytes([3]), compact_string("kc"),        # tag 0 cluster_id = "kc" (3 bytes)
)

FETCH_V12_RESPONSE = framed(
    i32(21), NO_TAGS,                                          # response header v1
    i32(0), i16(0), i32(0),                                    # throttle, error, session_id
    bytes([2]), compact_string("foo"),
    bytes([2]), i32(0) + i16(0) + i64(40) + i64(40) + i64(0),  # index, error, HW, LSO, log start
    b"\x00", i32(-1), b"\x01",                                 # aborted null, no preferred, no records
    b"\x01", b"\x00", bytes([13]), i32(2) + i64(38) + NO_TAGS,  # tag 0 diverging_epoch {2, 38}
    NO_TAGS,                                                   # end of the topic
    NO_TAGS,
)

OFFSET_FETCH_V8_REQUEST = framed(
    request_header_v1(9, 8, 5, "adminclient-1"), NO_TAGS,      # header v2
    bytes([3]),                                                # groups: two
    compact_string("g1"), bytes([2]), compact_string("foo"),   # g1 asks for foo
    bytes([3]), i32(0) + i32(1), NO_TAGS, NO_TAGS,             # partitions [0, 1]
    compact_string("g2"), b"\x00", NO_TAGS,                    # g2 asks for every topic (null)
    i8(1), NO_TAGS,                                            # require_stable
)

OFFSET_FETCH_V8_RESPONSE = framed(
    i32(5), NO_TAGS,                                           # response header v1
    i32(0), bytes([3]),                                        # throttle_time_ms, groups: two
    compact_string("g1"), bytes([2]), compact_string("foo"),
    bytes([2]), i32(0) + i64(7) + i32(2) + compact_string("m") + i16(0) + NO_TAGS,
    NO_TAGS, i16(0), NO_TAGS,                                  # end of foo; g1's error_code
    compact_string("g2"), bytes([1]), i16(30), NO_TAGS,        # no topics, GROUP_AUTHORIZATION_FAILED
    NO_TAGS,
)


def test_api_versions_v0_request_is_header_v1_with_an_empty_body():
    request = decode_request(memoryview(API_VERSIONS_V0_REQUEST)[4:])
    assert request.header == RequestHeader(18, 0, 1, "kcat")
    assert encode_request(18, 0, 1, "kcat", {}) == API_VERSIONS_V0_REQUEST


def test_api_versions_v3_request_uses_header_v2_and_compact_strings():
    request = decode_request(memoryview(API_VERSIONS_V3_REQUEST)[4:])
    assert request.header == RequestHeader(18, 3, 7, "rdkafka")
    assert (request.body.client_software_name, request.body.client_software_version) == ("librdkafka", "2.3.0")
    body = {"client_software_name": "librdkafka", "client_software_version": "2.3.0"}
    assert encode_request(18, 3, 7, "rdkafka", body) == API_VERSIONS_V3_REQUEST


def test_api_versions_v0_response_bytes():
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 7},
                                          {"api_key": 18, "min_version": 0, "max_version": 3}]}
    assert b"".join(encode_response(RequestHeader(18, 0, 1, "kcat"), body)) == API_VERSIONS_V0_RESPONSE


def test_api_versions_v3_response_keeps_header_v0_and_writes_non_default_tags():
    body = {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}], "finalized_features_epoch": 5}
    assert b"".join(encode_response(RequestHeader(18, 3, 7, "rdkafka"), body)) == API_VERSIONS_V3_RESPONSE
    correlation_id, decoded = decode_response(18, 3, API_VERSIONS_V3_RESPONSE[4:])
    assert correlation_id == 7
    assert decoded.finalized_features_epoch == 5
    assert decoded.supported_features == []


def test_metadata_v1_request_with_topics_and_with_null_for_all_topics():
    assert decode_request(memoryview(METADATA_V1_REQUEST)[4:]).body.topics[0].name == "foo"
    assert decode_request(memoryview(METADATA_V1_ALL_TOPICS_REQUEST)[4:]).body.topics is None
    assert encode_request(3, 1, 2, "kafka-python", {"topics": [{"name": "foo"}]}) == METADATA_V1_REQUEST
    assert encode_request(3, 1, 3, "kafka-python", {"topics": None}) == METADATA_V1_ALL_TOPICS_REQUEST


def test_metadata_v1_response_bytes():
    body = {
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092}],
        "controller_id": 1,
        "topics": [{"error_code": 0, "name": "foo", "partitions": [
            {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]}],
    }
    assert b"".join(encode_response(RequestHeader(3, 1, 2, "kafka-python"), body)) == METADATA_V1_RESPONSE
    _, decoded = decode_response(3, 1, METADATA_V1_RESPONSE[4:])
    assert to_dict(decoded)["topics"][0]["partitions"][0]["isr_nodes"] == [1]


def test_produce_v3_request_decodes_records_as_a_view_of_the_frame():
    frame = memoryview(PRODUCE_V3_REQUEST)[4:]
    header, body_offset = read_request_header(frame)
    assert header == RequestHeader(ApiKey.PRODUCE, 3, 9, "rdkafka")
    assert body_offset == 2 + 2 + 4 + 2 + len("rdkafka")
    body = decode_request(frame).body
    assert (body.transactional_id, body.acks, body.timeout_ms) == (None, -1, 30000)
    records = body.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is PRODUCE_V3_REQUEST
    assert records.tobytes() == b"hello"
    partition = {"index": 0, "records": b"hello"}
    rebuilt = {"acks": -1, "timeout_ms": 30000, "topic_data": [{"name": "foo", "partition_data": [partition]}]}
    assert encode_request(0, 3, 9, "rdkafka", rebuilt) == PRODUCE_V3_REQUEST


def test_produce_v3_response_bytes():
    body = {"responses": [{"name": "foo", "partition_responses": [{"index": 0, "base_offset": 42}]}]}
    assert b"".join(encode_response(RequestHeader(0, 3, 9, "rdkafka"), body)) == PRODUCE_V3_RESPONSE


def test_describe_cluster_v0_response_uses_response_header_v1():
    body = {"cluster_id": "kc-1", "controller_id": 1, "brokers": [{"broker_id": 1, "host": "h", "port": 9092}]}
    assert b"".join(encode_response(RequestHeader(60, 0, 4, "x"), body)) == DESCRIBE_CLUSTER_V0_RESPONSE


def test_delete_records_v0_request_and_response_bytes():
    body = decode_request(memoryview(DELETE_RECORDS_V0_REQUEST)[4:]).body
    assert [(p.partition_index, p.offset) for p in body.topics[0].partitions] == [(0, 3), (1, -1)]
    assert (body.topics[0].name, body.timeout_ms) == ("foo", 30000)
    request = {"topics": [{"name": "foo", "partitions": [{"partition_index": 0, "offset": 3},
                                                         {"partition_index": 1, "offset": -1}]}],
               "timeout_ms": 30000}
    assert encode_request(21, 0, 11, "adminclient-1", request) == DELETE_RECORDS_V0_REQUEST
    response = {"throttle_time_ms": 0, "topics": [{"name": "foo", "partitions": [
        {"partition_index": 0, "low_watermark": 3, "error_code": 0},
        {"partition_index": 1, "low_watermark": -1, "error_code": 1}]}]}
    header = RequestHeader(21, 0, 11, "adminclient-1")
    assert b"".join(encode_response(header, response)) == DELETE_RECORDS_V0_RESPONSE


def test_delete_records_v2_is_flexible_with_request_header_v2_and_response_header_v1():
    request = decode_request(memoryview(DELETE_RECORDS_V2_REQUEST)[4:])
    assert request.header == RequestHeader(21, 2, 12, "rdkafka")
    assert to_dict(request.body) == {"topics": [{"name": "foo", "partitions": [
        {"partition_index": 0, "offset": 7}]}], "timeout_ms": 60000}
    assert encode_request(21, 2, 12, "rdkafka", to_dict(request.body)) == DELETE_RECORDS_V2_REQUEST
    response = {"throttle_time_ms": 0, "topics": [{"name": "foo", "partitions": [
        {"partition_index": 0, "low_watermark": 7, "error_code": 0}]}]}
    assert b"".join(encode_response(request.header, response)) == DELETE_RECORDS_V2_RESPONSE
    correlation_id, decoded = decode_response(21, 2, DELETE_RECORDS_V2_RESPONSE[4:])
    assert correlation_id == 12 and decoded.topics[0].partitions[0].low_watermark == 7


# -- topic ids (KIP-516): Metadata v12-13, CreateTopics v7, DeleteTopics v6 --------------------

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
UNKNOWN_ID = uuid.UUID(int=1)

METADATA_V12_BY_ID_REQUEST = framed(
    request_header_v1(3, 12, 13, "rdkafka"), NO_TAGS,          # header v2
    bytes([3]),                                                # compact topics: 2 entries + 1
    TOPIC_ID.bytes + b"\x00" + NO_TAGS,                        # topic_id, name null (compact length 0)
    UNKNOWN_ID.bytes + b"\x00" + NO_TAGS,
    b"\x01", b"\x00", NO_TAGS,                                 # allow_auto_topic_creation, topic operations
)

METADATA_V13_RESPONSE = framed(
    i32(13), NO_TAGS,                                          # response header v1
    i32(0),                                                    # throttle_time_ms
    bytes([2]), i32(1) + compact_string("h") + i32(9092) + b"\x00" + NO_TAGS,  # one broker, rack null
    compact_string("kc-1"), i32(1),                            # cluster_id, controller_id
    bytes([3]),                                                # compact topics: 2 entries + 1
    i16(0) + compact_string("foo") + TOPIC_ID.bytes + b"\x00"  # error, name, topic_id, is_internal
    + bytes([2]) + i16(0) + i32(0) + i32(1) + i32(4)           # one partition: error, index, leader, epoch
    + bytes([2]) + i32(1) + bytes([2]) + i32(1) + bytes([1])   # replicas [1], isr [1], offline []
    + NO_TAGS + i32(-(2**31)) + NO_TAGS,                       # topic_authorized_operations omitted
    i16(100) + b"\x00" + UNKNOWN_ID.bytes + b"\x00"            # UNKNOWN_TOPIC_ID, name null, the id
    + bytes([1]) + i32(-(2**31)) + NO_TAGS,                    # no partitions
    i16(0), NO_TAGS,                                           # top-level error_code (v13)
)

CREATE_TOPICS_V7_RESPONSE = framed(
    i32(14), NO_TAGS,
    i32(0),                                                    # throttle_time_ms
    bytes([2]), compact_string("foo") + TOPIC_ID.bytes         # name, topic_id (v7)
    + i16(0) + b"\x00"                                         # error_code, error_message null
    + i32(3) + i16(1)                                          # num_partitions, replication_factor
    + bytes([2]) + compact_string("cleanup.policy") + compact_string("delete")
    + b"\x00" + i8(5) + b"\x00" + NO_TAGS                      # read_only, source DEFAULT_CONFIG, sensitive
    + NO_TAGS,                                                 # topic_config_error_code 0: not written
    NO_TAGS,
)

DELETE_TOPICS_V6_REQUEST = framed(
    request_header_v1(20, 6, 15, "adminclient-1"), NO_TAGS,
    bytes([3]),                                                # compact topics: 2 entries + 1
    compact_string("foo") + bytes(16) + NO_TAGS,               # by name: zero topic_id
    b"\x00" + TOPIC_ID.bytes + NO_TAGS,                        # by id: name null
    i32(30000), NO_TAGS,                                       # timeout_ms
)

DELETE_TOPICS_V6_RESPONSE = framed(
    i32(15), NO_TAGS,
    i32(0),                                                    # throttle_time_ms
    bytes([3]),
    compact_string("foo") + TOPIC_ID.bytes + i16(0) + b"\x00" + NO_TAGS,  # deleted, error_message null
    b"\x00" + UNKNOWN_ID.bytes + i16(100)                      # name null, UNKNOWN_TOPIC_ID
    + compact_string("unknown") + NO_TAGS,
    NO_TAGS,
)


def test_metadata_v12_asks_for_topics_by_id_with_null_names():
    request = decode_request(memoryview(METADATA_V12_BY_ID_REQUEST)[4:])
    assert [(t.name, t.topic_id) for t in request.body.topics] == [(None, TOPIC_ID), (None, UNKNOWN_ID)]
    body = {"topics": [{"topic_id": TOPIC_ID, "name": None}, {"topic_id": UNKNOWN_ID, "name": None}],
            "allow_auto_topic_creation": True}
    assert encode_request(3, 12, 13, "rdkafka", body) == METADATA_V12_BY_ID_REQUEST


def test_metadata_v13_response_bytes_with_topic_ids_and_the_top_level_error_code():
    body = {
        "brokers": [{"node_id": 1, "host": "h", "port": 9092}], "cluster_id": "kc-1", "controller_id": 1,
        "topics": [
            {"error_code": 0, "name": "foo", "topic_id": TOPIC_ID, "partitions": [
                {"partition_index": 0, "leader_id": 1, "leader_epoch": 4, "replica_nodes": [1], "isr_nodes": [1]}]},
            {"error_code": 100, "name": None, "topic_id": UNKNOWN_ID, "partitions": []}],
        "cluster_authorized_operations": 0,                    # v8-10 only: not written
    }
    assert b"".join(encode_response(RequestHeader(3, 13, 13, "rdkafka"), body)) == METADATA_V13_RESPONSE
    _, decoded = decode_response(3, 13, METADATA_V13_RESPONSE[4:])
    assert [(t.name, t.topic_id) for t in decoded.topics] == [("foo", TOPIC_ID), (None, UNKNOWN_ID)]


def test_create_topics_v7_response_bytes_with_the_id_and_the_configs_of_kip_525():
    body = {"topics": [{"name": "foo", "topic_id": TOPIC_ID, "error_code": 0, "num_partitions": 3,
                        "replication_factor": 1, "configs": [
                            {"name": "cleanup.policy", "value": "delete", "read_only": False,
                             "config_source": 5, "is_sensitive": False}]}]}
    assert b"".join(encode_response(RequestHeader(19, 7, 14, "x"), body)) == CREATE_TOPICS_V7_RESPONSE
    _, decoded = decode_response(19, 7, CREATE_TOPICS_V7_RESPONSE[4:])
    assert decoded.topics[0].topic_id == TOPIC_ID and decoded.topics[0].configs[0].config_source == 5


def test_delete_topics_v6_names_topics_by_name_or_by_id():
    request = decode_request(memoryview(DELETE_TOPICS_V6_REQUEST)[4:])
    assert [(t.name, t.topic_id) for t in request.body.topics] == [("foo", uuid.UUID(int=0)), (None, TOPIC_ID)]
    body = {"topics": [{"name": "foo"}, {"name": None, "topic_id": TOPIC_ID}], "timeout_ms": 30000}
    assert encode_request(20, 6, 15, "adminclient-1", body) == DELETE_TOPICS_V6_REQUEST
    response = {"responses": [
        {"name": "foo", "topic_id": TOPIC_ID, "error_code": 0},
        {"name": None, "topic_id": UNKNOWN_ID, "error_code": 100, "error_message": "unknown"}]}
    header = RequestHeader(20, 6, 15, "adminclient-1")
    assert b"".join(encode_response(header, response)) == DELETE_TOPICS_V6_RESPONSE


DESCRIBE_TOPIC_PARTITIONS_V0_REQUEST = framed(
    request_header_v1(75, 0, 16, "adminclient-1"), NO_TAGS,
    bytes([2]), compact_string("foo") + NO_TAGS,               # topics: one
    i32(2000),                                                 # response_partition_limit
    i8(1) + compact_string("foo") + i32(3) + NO_TAGS,          # cursor present: topic, partition
    NO_TAGS,
)

DESCRIBE_TOPIC_PARTITIONS_V0_RESPONSE = framed(
    i32(16), NO_TAGS,
    i32(0),                                                    # throttle_time_ms
    bytes([2]), i16(0) + compact_string("foo") + TOPIC_ID.bytes + b"\x00"  # error, name, id, is_internal
    + bytes([2]) + i16(0) + i32(3) + i32(1) + i32(7)           # partition 3: error, index, leader, epoch
    + bytes([3]) + i32(1) + i32(2) + bytes([2]) + i32(1)       # replicas [1, 2], isr [1]
    + bytes([1]) + b"\x00" + bytes([2]) + i32(2)               # elr [], last_known_elr null, offline [2]
    + NO_TAGS + i32(-(2**31)) + NO_TAGS,                       # topic_authorized_operations omitted
    i8(1) + compact_string("foo") + i32(4) + NO_TAGS,          # next_cursor: foo-4
    NO_TAGS,
)


def test_describe_topic_partitions_v0_cursors_are_nullable_structs():
    request = decode_request(memoryview(DESCRIBE_TOPIC_PARTITIONS_V0_REQUEST)[4:])
    assert (request.body.cursor.topic_name, request.body.cursor.partition_index) == ("foo", 3)
    body = {"topics": [{"name": "foo"}], "cursor": {"topic_name": "foo", "partition_index": 3}}
    assert encode_request(75, 0, 16, "adminclient-1", body) == DESCRIBE_TOPIC_PARTITIONS_V0_REQUEST
    no_cursor = encode_request(75, 0, 16, "adminclient-1", {"topics": []})
    assert no_cursor.endswith(i32(2000) + b"\xff" + NO_TAGS)  # null struct: int8 -1
    assert decode_request(memoryview(no_cursor)[4:]).body.cursor is None
    response = {"topics": [{"name": "foo", "topic_id": TOPIC_ID, "partitions": [
        {"partition_index": 3, "leader_id": 1, "leader_epoch": 7, "replica_nodes": [1, 2], "isr_nodes": [1],
         "eligible_leader_replicas": [], "offline_replicas": [2]}]}],
        "next_cursor": {"topic_name": "foo", "partition_index": 4}}
    header = RequestHeader(75, 0, 16, "adminclient-1")
    assert b"".join(encode_response(header, response)) == DESCRIBE_TOPIC_PARTITIONS_V0_RESPONSE
    _, decoded = decode_response(75, 0, DESCRIBE_TOPIC_PARTITIONS_V0_RESPONSE[4:])
    assert decoded.next_cursor.partition_index == 4 and decoded.topics[0].partitions[0].last_known_elr is None


# -- Produce v10 (KIP-951 leader hints) and v13 (topic ids) -----------------------------------------

PRODUCE_V10_NOT_LEADER_RESPONSE = framed(
    i32(17), NO_TAGS,
    bytes([2]), compact_string("foo"),                         # one topic
    bytes([3]),                                                # two partitions
    i32(0) + i16(6) + i64(-1) + i64(-1) + i64(-1)              # NOT_LEADER_OR_FOLLOWER, no offsets
    + bytes([1]) + b"\x00"                                     # record_errors [], error_message null
    + bytes([1, 0, 9]) + i32(2) + i32(7) + NO_TAGS,            # tag 0 (9 bytes): current_leader 2, epoch 7
    i32(1) + i16(0) + i64(42) + i64(-1) + i64(0)               # appended: its current_leader is the
    + bytes([1]) + b"\x00" + NO_TAGS,                          # default (-1, -1), not written
    NO_TAGS,
    i32(0),                                                    # throttle_time_ms
    bytes([1, 0, 14]),                                         # tag 0 (14 bytes): node_endpoints
    bytes([2]) + i32(2) + compact_string("b2") + i32(9093) + b"\x00" + NO_TAGS,  # node 2, rack null
)

PRODUCE_V13_REQUEST = framed(
    request_header_v1(0, 13, 18, "rdkafka"), NO_TAGS,
    b"\x00", i16(-1), i32(30000),                              # transactional_id null, acks, timeout_ms
    bytes([2]), TOPIC_ID.bytes,                                # one topic, by id (no name from v13)
    bytes([2]), i32(0) + bytes([6]) + b"hello" + NO_TAGS,      # partition 0, 5 record bytes
    NO_TAGS, NO_TAGS,
)


def test_produce_v10_leader_hints_are_tagged_fields_written_only_when_known():
    body = {"responses": [{"name": "foo", "partition_responses": [
        {"index": 0, "error_code": 6, "base_offset": -1, "log_start_offset": -1,
         "current_leader": {"leader_id": 2, "leader_epoch": 7}},
        {"index": 1, "error_code": 0, "base_offset": 42, "log_start_offset": 0,
         "current_leader": {"leader_id": -1, "leader_epoch": -1}}]}],
        "node_endpoints": [{"node_id": 2, "host": "b2", "port": 9093}]}
    frame = b"".join(encode_response(RequestHeader(0, 10, 17, "rdkafka"), body))
    assert frame == PRODUCE_V10_NOT_LEADER_RESPONSE
    _, decoded = decode_response(0, 10, frame[4:])
    hinted, appended = decoded.responses[0].partition_responses
    assert (hinted.current_leader.leader_id, hinted.current_leader.leader_epoch) == (2, 7)
    assert (appended.current_leader.leader_id, appended.current_leader.leader_epoch) == (-1, -1)
    assert [(n.node_id, n.host, n.port, n.rack) for n in decoded.node_endpoints] == [(2, "b2", 9093, None)]
    # v9 has neither field: the same answer with empty tag sections (11 and 16 bytes fewer).
    v9 = b"".join(encode_response(RequestHeader(0, 9, 17, "rdkafka"), body))
    assert len(v9) == len(frame) - 11 - 16


def test_produce_v13_names_topics_by_id():
    request = decode_request(memoryview(PRODUCE_V13_REQUEST)[4:])
    topic = request.body.topic_data[0]
    assert (topic.topic_id, topic.partition_data[0].records.tobytes()) == (TOPIC_ID, b"hello")
    body = {"acks": -1, "timeout_ms": 30000, "topic_data": [
        {"topic_id": TOPIC_ID, "partition_data": [{"index": 0, "records": b"hello"}]}]}
    assert encode_request(0, 13, 18, "rdkafka", body) == PRODUCE_V13_REQUEST


def test_fetch_v12_carries_the_last_fetched_epoch_and_tags_the_diverging_epoch():
    request = decode_request(memoryview(FETCH_V12_REQUEST)[4:])
    body = request.body
    (partition,) = body.topics[0].partitions
    assert (partition.fetch_offset, partition.last_fetched_epoch) == (42, 3)
    assert (body.rack_id, body.cluster_id, body.isolation_level) == ("rack-b", "kc", 1)
    again = encode_request(1, 12, 21, "rdkafka", to_dict(body))
    assert again == FETCH_V12_REQUEST
    # Answered with a diverging epoch: the only tagged field written, as it
    # alone differs from its default (current_leader and snapshot_id stay out).
    response = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "foo", "partitions": [{
            "partition_index": 0, "error_code": 0, "high_watermark": 40, "last_stable_offset": 40,
            "log_start_offset": 0, "diverging_epoch": {"epoch": 2, "end_offset": 38},
            "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}]}]}
    assert b"".join(encode_response(request.header, response)) == FETCH_V12_RESPONSE
    _, decoded = decode_response(1, 12, FETCH_V12_RESPONSE[4:])
    data = decoded.responses[0].partitions[0]
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (2, 38)
    assert data.current_leader.leader_id == -1 and data.snapshot_id.end_offset == -1


def test_offset_fetch_v8_asks_for_several_groups_and_answers_each_with_its_own_error():
    request = decode_request(memoryview(OFFSET_FETCH_V8_REQUEST)[4:])
    assert to_dict(request.body) == {"groups": [
        {"group_id": "g1", "member_id": None, "member_epoch": -1,
         "topics": [{"name": "foo", "partition_indexes": [0, 1]}]},
        {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": None}],
        "group_id": "", "topics": [], "require_stable": True}
    assert encode_request(9, 8, 5, "adminclient-1", to_dict(request.body)) == OFFSET_FETCH_V8_REQUEST
    response = {"throttle_time_ms": 0, "groups": [
        {"group_id": "g1", "error_code": 0, "topics": [{"name": "foo", "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": 2,
             "metadata": "m", "error_code": 0}]}]},
        {"group_id": "g2", "error_code": 30, "topics": []}]}
    assert b"".join(encode_response(request.header, response)) == OFFSET_FETCH_V8_RESPONSE

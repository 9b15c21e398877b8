"""The controller/broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown, AlterPartition) and ElectLeaders.

Field-by-field agreement with Kafka's specs at every served version is in
test_protocol_schemas (it reads the specs kept in tests/unit/specs/), round
trips (unknown top-level tagged fields included) in test_protocol_roundtrip.
Here: the stored specs themselves, the pinned versions, and golden frames at
the pinned versions written out byte by byte from the specs (compact arrays
and strings are an unsigned varint of length + 1, then the items; every
struct of a flexible version ends with its tagged-field section).
"""
from __future__ import annotations

import json
import re
import uuid

import pytest

from kcore.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    to_dict,
)
from kcore.protocol.api_keys import INTER_BROKER_VERSIONS
from kcore.protocol.messages import REQUESTS, RESPONSES, leader_and_isr
from kcore.protocol.schema import Field, Struct, parse_versions
from tests.support.protocol_bytes import (
    NO_TAGS,
    compact_string,
    framed,
    i8,
    i16,
    i32,
    i64,
    request_header_v1,
)
from tests.support.protocol_specs import LOCAL_SPECS, SPECS, load_spec, schema_view, spec_view
from tests.support.protocol_strategies import normalize

NEW_KEYS = [ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
            ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION]
TRANSCRIBED_FIRST_LINE = "// Kafka's message spec as served by Apache Kafka 4.2"
LICENSE_FIRST_LINE = "// Licensed to the Apache Software Foundation (ASF) under one or more"


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_array(*items: bytes) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def compact_int32s(*values: int) -> bytes:
    return compact_array(*(i32(value) for value in values))


def tag_section(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


def request_header_v2(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    return request_header_v1(api_key, version, correlation_id, client_id) + NO_TAGS


def response_header_v1(correlation_id: int) -> bytes:
    return i32(correlation_id) + NO_TAGS


def boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


# -- the stored specs -------------------------------------------------------------------------------------

def test_stored_specs_are_kafkas_licensed_files_for_served_schemas_kafka_python_lacks():
    served = {schema.name for schema in (*REQUESTS.values(), *RESPONSES.values())}
    stored = sorted(LOCAL_SPECS.glob("*.json"))
    # The ZooKeeper-era inter-broker APIs, and the KIP-848 group APIs that
    # kafka-python (a classic-protocol client) does not ship; the share-group
    # APIs (KIP-932) are transcriptions of Kafka 4.2's specs (README.md).
    kip848 = (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE)
    kip932 = {schema.name for key in SUPPORTED_VERSIONS if "SHARE" in key.name
              for schema in (REQUESTS[key], RESPONSES[key])}
    assert kip932
    assert {path.stem for path in stored} == kip932 | {
        schema.name for key in (*INTER_BROKER_VERSIONS, *kip848) for schema in (REQUESTS[key], RESPONSES[key])
        if key != ApiKey.WRITE_TXN_MARKERS}  # still in Kafka 4, so kafka-python has it
    for path in stored:
        assert path.read_text().startswith(TRANSCRIBED_FIRST_LINE if path.stem in kip932 else LICENSE_FIRST_LINE)
        assert path.stem in served
        assert not SPECS.joinpath(path.name).is_file()  # would shadow kafka-python's copy
        assert json.loads(re.sub(r"(?m)^\s*//.*$", "", path.read_text()))["name"] == path.stem


@pytest.mark.parametrize("key", NEW_KEYS, ids=[key.name for key in NEW_KEYS])
def test_served_range_lies_inside_the_spec_valid_versions(key):
    low, high = SUPPORTED_VERSIONS[key]
    for schema in (REQUESTS[key], RESPONSES[key]):
        valid_low, valid_high = parse_versions(load_spec(schema.name)["validVersions"])
        assert valid_low <= low <= high <= valid_high


def test_a_misnamed_field_fails_the_spec_comparison():
    # partition_epoch was ZkVersion in the specs before Kafka 3.3 (the same int32 in the same place).
    state = next(field.struct for field in leader_and_isr.REQUEST.fields
                 if field.name == "ungrouped_partition_states")
    spec = next(field["fields"] for field in load_spec("LeaderAndIsrRequest")["fields"]
                if field["name"] == "UngroupedPartitionStates")
    typo = Struct(state.name, [Field("zk_version", "int32", "0+") if field.name == "partition_epoch" else field
                               for field in state.fields])
    for version in (0, 1):
        assert schema_view(state, version) == spec_view(spec, version, range(0, 5))
        assert schema_view(typo, version) != spec_view(spec, version, range(0, 5))


# -- pinned versions --------------------------------------------------------------------------------------

def test_inter_broker_apis_are_pinned_to_a_served_flexible_version():
    assert set(INTER_BROKER_VERSIONS) == {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                                          ApiKey.CONTROLLED_SHUTDOWN, ApiKey.ALTER_PARTITION,
                                          ApiKey.WRITE_TXN_MARKERS}
    for key, version in INTER_BROKER_VERSIONS.items():
        low, high = SUPPORTED_VERSIONS[key]
        assert low <= version <= high
        assert REQUESTS[key].is_flexible(version) and RESPONSES[key].is_flexible(version)
    # LeaderAndIsr and UpdateMetadata: the first versions whose topics carry their ids (KIP-516).
    for key in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA):
        topic_states = next(f.struct for f in REQUESTS[key].fields if f.name == "topic_states")
        topic_id = next(f for f in topic_states.fields if f.name == "topic_id")
        assert INTER_BROKER_VERSIONS[key] == topic_id.versions[0]


# -- golden frames at the pinned versions -----------------------------------------------------------------

LEADER_AND_ISR_V4_BODY = {
    "controller_id": 1, "controller_epoch": 3, "broker_epoch": 4242,
    "topic_states": [{"topic_name": "orders", "partition_states": [
        {"partition_index": 0, "controller_epoch": 3, "leader": 1, "leader_epoch": 5, "isr": [1, 2],
         "partition_epoch": 7, "replicas": [1, 2, 3], "adding_replicas": [3], "removing_replicas": [],
         "is_new": True}]}],
    "live_leaders": [{"broker_id": 1, "host_name": "b1", "port": 9092}],
}


def leader_and_isr_v4_partition(tags: bytes = NO_TAGS) -> bytes:
    return (i32(0) + i32(3) + i32(1) + i32(5)                      # partition, controller_epoch, leader, leader_epoch
            + compact_int32s(1, 2) + i32(7)                        # isr, partition_epoch (the zkVersion)
            + compact_int32s(1, 2, 3) + compact_int32s(3) + compact_int32s()  # replicas, adding, removing
            + boolean(True) + tags)                                # is_new


def leader_and_isr_v4_request(partition_tags: bytes = NO_TAGS, tags: bytes = NO_TAGS) -> bytes:
    return framed(
        request_header_v2(4, 4, 21, "kcore-controller"),
        i32(1), i32(3), i64(4242),                                 # controller_id, controller_epoch, broker_epoch
        compact_array(compact_string("orders") + compact_array(leader_and_isr_v4_partition(partition_tags))
                      + NO_TAGS),                                  # topic_states
        compact_array(i32(1) + compact_string("b1") + i32(9092) + NO_TAGS),  # live_leaders
        tags,
    )


TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")

LEADER_AND_ISR_V5_BODY = {
    **LEADER_AND_ISR_V4_BODY, "type": 2,
    "topic_states": [{**LEADER_AND_ISR_V4_BODY["topic_states"][0], "topic_id": TOPIC_ID}],
}


def leader_and_isr_v5_request() -> bytes:
    return framed(
        request_header_v2(4, 5, 29, "kcore-controller"),
        i32(1), i32(3), i64(4242),                                 # controller_id, controller_epoch, broker_epoch
        i8(2),                                                     # type: FULL
        compact_array(compact_string("orders") + TOPIC_ID.bytes    # topic_states: name, topic_id (16 bytes)
                      + compact_array(leader_and_isr_v4_partition()) + NO_TAGS),
        compact_array(i32(1) + compact_string("b1") + i32(9092) + NO_TAGS),  # live_leaders
        NO_TAGS,
    )


STOP_REPLICA_V3_BODY = {
    "controller_id": 1, "controller_epoch": 3, "broker_epoch": 4242,
    "topic_states": [{"topic_name": "orders", "partition_states": [
        {"partition_index": 0, "leader_epoch": 5, "delete_partition": False},
        {"partition_index": 1, "leader_epoch": -2, "delete_partition": True}]}],  # -2: topic being deleted
}

UPDATE_METADATA_V6_BODY = {
    "controller_id": 1, "controller_epoch": 3, "broker_epoch": 4242,
    "topic_states": [{"topic_name": "orders", "partition_states": [
        {"partition_index": 0, "controller_epoch": 3, "leader": 2, "leader_epoch": 6, "isr": [2],
         "zk_version": 8, "replicas": [1, 2], "offline_replicas": [1]}]}],
    "live_brokers": [{"id": 2, "endpoints": [{"port": 9092, "host": "b2", "listener": "PLAINTEXT",
                                             "security_protocol": 0}], "rack": None}],
}

UPDATE_METADATA_V7_BODY = {
    **UPDATE_METADATA_V6_BODY,
    "topic_states": [{**UPDATE_METADATA_V6_BODY["topic_states"][0], "topic_id": TOPIC_ID}],
}

ALTER_PARTITION_V1_REQUEST_BODY = {
    "broker_id": 1, "broker_epoch": 4242,
    "topics": [{"topic_name": "orders", "partitions": [
        {"partition_index": 0, "leader_epoch": 5, "new_isr": [1], "leader_recovery_state": 0,
         "partition_epoch": 7}]}],
}

ALTER_PARTITION_V1_RESPONSE_BODY = {
    "throttle_time_ms": 0, "error_code": 0,
    "topics": [{"topic_name": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 5, "isr": [1],
         "leader_recovery_state": 0, "partition_epoch": 8}]}],
}

ELECT_LEADERS_V2_REQUEST_BODY = {
    "election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0, 1]}], "timeout_ms": 30000}

ELECT_LEADERS_V2_RESPONSE_BODY = {
    "throttle_time_ms": 0, "error_code": 0,
    "replica_election_results": [{"topic": "orders", "partition_result": [
        {"partition_id": 0, "error_code": 0, "error_message": None},
        {"partition_id": 1, "error_code": ErrorCode.ELECTION_NOT_NEEDED, "error_message": "leader is preferred"}]}],
}

SHUTDOWN_REMAINING = [{"topic_name": "t", "partition_index": index} for index in range(200)]

# (id, api key, version, request?, body, frame with size prefix)
GOLDEN = [
    ("leader_and_isr_request_v4", 4, 4, True, LEADER_AND_ISR_V4_BODY, leader_and_isr_v4_request()),
    ("leader_and_isr_response_v4", 4, 4, False,
     {"error_code": 0, "partition_errors": [
         {"topic_name": "orders", "partition_index": 0, "error_code": ErrorCode.FENCED_LEADER_EPOCH}]},
     framed(response_header_v1(21), i16(0),
            compact_array(compact_string("orders") + i32(0) + i16(74) + NO_TAGS), NO_TAGS)),
    ("leader_and_isr_request_v5", 4, 5, True, LEADER_AND_ISR_V5_BODY, leader_and_isr_v5_request()),
    ("leader_and_isr_response_v5", 4, 5, False,
     {"error_code": 0, "topics": [{"topic_id": TOPIC_ID, "partition_errors": [
         {"partition_index": 0, "error_code": ErrorCode.FENCED_LEADER_EPOCH}]}]},
     framed(response_header_v1(29), i16(0),
            compact_array(TOPIC_ID.bytes                           # topics: topic_id, then its partitions
                          + compact_array(i32(0) + i16(74) + NO_TAGS) + NO_TAGS), NO_TAGS)),
    ("leader_and_isr_response_v4_stale_controller", 4, 4, False,
     {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH},
     framed(response_header_v1(21), i16(11), compact_array(), NO_TAGS)),
    ("stop_replica_request_v3", 5, 3, True, STOP_REPLICA_V3_BODY, framed(
        request_header_v2(5, 3, 22, "kcore-controller"),
        i32(1), i32(3), i64(4242),                                 # controller_id, controller_epoch, broker_epoch
        compact_array(compact_string("orders") + compact_array(
            i32(0) + i32(5) + boolean(False) + NO_TAGS,            # partition_index, leader_epoch, delete_partition
            i32(1) + i32(-2) + boolean(True) + NO_TAGS) + NO_TAGS),
        NO_TAGS)),
    ("stop_replica_response_v3", 5, 3, False,
     {"error_code": 0, "partition_errors": [{"topic_name": "orders", "partition_index": 1, "error_code": 0}]},
     framed(response_header_v1(22), i16(0), compact_array(compact_string("orders") + i32(1) + i16(0) + NO_TAGS),
            NO_TAGS)),
    ("update_metadata_request_v6", 6, 6, True, UPDATE_METADATA_V6_BODY, framed(
        request_header_v2(6, 6, 23, "kcore-controller"),
        i32(1), i32(3), i64(4242),
        compact_array(compact_string("orders") + compact_array(
            i32(0) + i32(3) + i32(2) + i32(6) + compact_int32s(2)  # partition, controller_epoch, leader, epoch, isr
            + i32(8) + compact_int32s(1, 2) + compact_int32s(1)    # zk_version, replicas, offline_replicas
            + NO_TAGS) + NO_TAGS),
        compact_array(i32(2)                                       # live_brokers: id
                      + compact_array(i32(9092) + compact_string("b2") + compact_string("PLAINTEXT") + i16(0)
                                      + NO_TAGS)                   # endpoints: port, host, listener, protocol
                      + b"\x00" + NO_TAGS),                        # rack null (compact length 0)
        NO_TAGS)),
    ("update_metadata_request_v7", 6, 7, True, UPDATE_METADATA_V7_BODY, framed(
        request_header_v2(6, 7, 30, "kcore-controller"),
        i32(1), i32(3), i64(4242),
        compact_array(compact_string("orders") + TOPIC_ID.bytes    # topic name, topic_id
                      + compact_array(
                          i32(0) + i32(3) + i32(2) + i32(6) + compact_int32s(2)
                          + i32(8) + compact_int32s(1, 2) + compact_int32s(1) + NO_TAGS) + NO_TAGS),
        compact_array(i32(2)
                      + compact_array(i32(9092) + compact_string("b2") + compact_string("PLAINTEXT") + i16(0)
                                      + NO_TAGS)
                      + b"\x00" + NO_TAGS),
        NO_TAGS)),
    ("update_metadata_response_v6", 6, 6, False, {"error_code": 0},
     framed(response_header_v1(23), i16(0), NO_TAGS)),
    ("controlled_shutdown_request_v3", 7, 3, True, {"broker_id": 2, "broker_epoch": 4242},
     framed(request_header_v2(7, 3, 24, "kcore-2"), i32(2), i64(4242), NO_TAGS)),
    ("controlled_shutdown_response_v3", 7, 3, False,
     {"error_code": 0, "remaining_partitions": SHUTDOWN_REMAINING},
     framed(response_header_v1(24), i16(0),
            b"\xc9\x01"                                            # uvarint 201: 200 entries + 1
            + b"".join(compact_string("t") + i32(index) + NO_TAGS for index in range(200)),
            NO_TAGS)),
    ("alter_partition_request_v1", 56, 1, True, ALTER_PARTITION_V1_REQUEST_BODY, framed(
        request_header_v2(56, 1, 25, "kcore-1"),
        i32(1), i64(4242),                                         # broker_id, broker_epoch
        compact_array(compact_string("orders") + compact_array(
            i32(0) + i32(5) + compact_int32s(1)                    # partition_index, leader_epoch, new_isr
            + i8(0) + i32(7) + NO_TAGS) + NO_TAGS),                # leader_recovery_state, partition_epoch
        NO_TAGS)),
    ("alter_partition_response_v1", 56, 1, False, ALTER_PARTITION_V1_RESPONSE_BODY, framed(
        response_header_v1(25),
        i32(0), i16(0),                                            # throttle_time_ms, error_code
        compact_array(compact_string("orders") + compact_array(
            i32(0) + i16(0) + i32(1) + i32(5) + compact_int32s(1)  # partition, error, leader_id, epoch, isr
            + i8(0) + i32(8) + NO_TAGS) + NO_TAGS),                # leader_recovery_state, partition_epoch
        NO_TAGS)),
    ("elect_leaders_request_v2", 43, 2, True, ELECT_LEADERS_V2_REQUEST_BODY, framed(
        request_header_v2(43, 2, 26, "adminclient-1"),
        i8(0),                                                     # election_type: preferred
        compact_array(compact_string("orders") + compact_int32s(0, 1) + NO_TAGS),
        i32(30000), NO_TAGS)),
    ("elect_leaders_request_v2_all_partitions", 43, 2, True, {"election_type": 1, "topic_partitions": None},
     framed(request_header_v2(43, 2, 27, "adminclient-1"), i8(1), b"\x00", i32(60000), NO_TAGS)),
    ("elect_leaders_request_v1_all_partitions", 43, 1, True, {"election_type": 0, "topic_partitions": None},
     framed(request_header_v1(43, 1, 28, "rdkafka"),             # not flexible: no tagged fields
            i8(0), i32(-1), i32(60000))),                          # null array is length -1
    ("elect_leaders_response_v2", 43, 2, False, ELECT_LEADERS_V2_RESPONSE_BODY, framed(
        response_header_v1(26),
        i32(0), i16(0),
        compact_array(compact_string("orders") + compact_array(
            i32(0) + i16(0) + b"\x00" + NO_TAGS,                   # error_message null
            i32(1) + i16(84) + compact_string("leader is preferred") + NO_TAGS) + NO_TAGS),
        NO_TAGS)),
]


@pytest.mark.parametrize("case", GOLDEN, ids=[case[0] for case in GOLDEN])
def test_golden_frame_is_what_the_encoder_writes_and_decodes_to_the_body(case):
    _id, api_key, version, is_request, body, frame = case
    correlation_id = int.from_bytes(frame[8:12] if is_request else frame[4:8], "big")
    if is_request:
        schema = REQUESTS[api_key]
        client_id = frame[14:14 + int.from_bytes(frame[12:14], "big")].decode()
        assert encode_request(api_key, version, correlation_id, client_id, body) == frame
        request = decode_request(memoryview(frame)[4:])
        assert request.header == RequestHeader(api_key, version, correlation_id, client_id)
        decoded = request.body
    else:
        schema = RESPONSES[api_key]
        header = RequestHeader(api_key, version, correlation_id, "any")
        assert b"".join(bytes(chunk) for chunk in encode_response(header, body)) == frame
        assert decode_response(api_key, version, frame[4:])[0] == correlation_id
        decoded = decode_response(api_key, version, frame[4:])[1]
    assert to_dict(decoded) == normalize(schema, version, body)


def test_leader_and_isr_v4_skips_tagged_fields_a_newer_controller_adds():
    frame = leader_and_isr_v4_request(partition_tags=tag_section((6, i8(1))),     # a v6-style tag, unknown at v4
                                      tags=tag_section((0, b"\x01"), (300, b"")))  # tag 300: two-byte varint
    request = decode_request(memoryview(frame)[4:])
    assert to_dict(request.body) == normalize(REQUESTS[4], 4, LEADER_AND_ISR_V4_BODY)
    state = request.body.topic_states[0].partition_states[0]
    assert (state.leader, state.leader_epoch, state.isr, state.partition_epoch) == (1, 5, [1, 2], 7)

"""AddPartitionsToTxn v4-5 (KIP-890 part 1, broker to broker): golden
frames written out byte by byte from Kafka's AddPartitionsToTxnRequest.json
and AddPartitionsToTxnResponse.json (flexible from v3: compact strings and
arrays, a tagged-field section closing every struct), and v3, the last
client version, beside them. Field-by-field agreement with the specs at
every version is in test_protocol_schemas."""
from __future__ import annotations

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
from kcore.protocol.api_keys import BROKER_VERSIONS_FROM
from kcore.protocol.messages import REQUESTS, RESPONSES
from tests.support.protocol_bytes import NO_TAGS, compact_string, framed, i16, i32, i64, request_header_v1
from tests.support.protocol_strategies import normalize
from tests.unit.test_protocol_inter_broker import compact_array, compact_int32s, request_header_v2


def boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def response_header_v1(correlation_id: int) -> bytes:
    return i32(correlation_id) + NO_TAGS


VERIFY_REQUEST_BODY = {"transactions": [
    {"transactional_id": "billing", "producer_id": 4242, "producer_epoch": 3, "verify_only": True,
     "topics": [{"name": "orders", "partitions": [0, 2]}]},
    {"transactional_id": "shipping", "producer_id": 77, "producer_epoch": 0, "verify_only": True,
     "topics": [{"name": "orders", "partitions": [1]}, {"name": "refunds", "partitions": [0]}]}]}

VERIFY_REQUEST_FRAME = framed(
    request_header_v2(24, 5, 31, "kcore-txn-verifier-2"),
    compact_array(
        compact_string("billing") + i64(4242) + i16(3) + boolean(True)   # id, producer id, epoch, verify_only
        + compact_array(compact_string("orders") + compact_int32s(0, 2) + NO_TAGS) + NO_TAGS,
        compact_string("shipping") + i64(77) + i16(0) + boolean(True)
        + compact_array(compact_string("orders") + compact_int32s(1) + NO_TAGS,
                        compact_string("refunds") + compact_int32s(0) + NO_TAGS) + NO_TAGS),
    NO_TAGS)

VERIFY_RESPONSE_BODY = {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": [
    {"transactional_id": "billing", "topic_results": [{"name": "orders", "results_by_partition": [
        {"partition_index": 0, "partition_error_code": 0},
        {"partition_index": 2, "partition_error_code": ErrorCode.TRANSACTION_ABORTABLE}]}]}]}

VERIFY_RESPONSE_FRAME = framed(
    response_header_v1(31),
    i32(0), i16(0),                                                # throttle_time_ms, error_code
    compact_array(compact_string("billing") + compact_array(
        compact_string("orders") + compact_array(
            i32(0) + i16(0) + NO_TAGS,                             # partition 0: NONE
            i32(2) + i16(120) + NO_TAGS)                           # partition 2: TRANSACTION_ABORTABLE
        + NO_TAGS) + NO_TAGS),
    NO_TAGS)

CLIENT_REQUEST_BODY = {"v3_and_below_transactional_id": "billing", "v3_and_below_producer_id": 4242,
                       "v3_and_below_producer_epoch": 3,
                       "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]}

GOLDEN = [
    ("request_v5_verify_only", 5, True, VERIFY_REQUEST_BODY, VERIFY_REQUEST_FRAME),
    ("response_v5", 5, False, VERIFY_RESPONSE_BODY, VERIFY_RESPONSE_FRAME),
    ("request_v4_add", 4, True,
     {"transactions": [{"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "verify_only": False,
                        "topics": [{"name": "a", "partitions": [5]}]}]},
     framed(request_header_v2(24, 4, 32, "kcore-2"),
            compact_array(compact_string("t") + i64(1) + i16(0) + boolean(False)
                          + compact_array(compact_string("a") + compact_int32s(5) + NO_TAGS) + NO_TAGS),
            NO_TAGS)),
    ("response_v4_cluster_authorization_failed", 4, False,
     {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results_by_transaction": []},
     framed(response_header_v1(32), i32(0), i16(31), compact_array(), NO_TAGS)),
    ("request_v3_client", 3, True, CLIENT_REQUEST_BODY,
     framed(request_header_v2(24, 3, 33, "rdkafka"),
            compact_string("billing"), i64(4242), i16(3),
            compact_array(compact_string("orders") + compact_int32s(0) + NO_TAGS), NO_TAGS)),
    ("request_v2_client", 2, True, CLIENT_REQUEST_BODY,
     framed(request_header_v1(24, 2, 34, "kafka-python"),
            i16(7) + b"billing", i64(4242), i16(3),                # not flexible: int16-length string
            i32(1), i16(6) + b"orders", i32(1), i32(0))),
]


@pytest.mark.parametrize("case", GOLDEN, ids=[case[0] for case in GOLDEN])
def test_golden_frame_is_what_the_encoder_writes_and_decodes_to_the_body(case):
    _id, version, is_request, body, frame = case
    correlation_id = int.from_bytes(frame[8:12] if is_request else frame[4:8], "big")
    if is_request:
        client_id = frame[14:14 + int.from_bytes(frame[12:14], "big")].decode()
        assert encode_request(ApiKey.ADD_PARTITIONS_TO_TXN, version, correlation_id, client_id, body) == frame
        request = decode_request(memoryview(frame)[4:])
        assert request.header == RequestHeader(ApiKey.ADD_PARTITIONS_TO_TXN, version, correlation_id,
                                               client_id)
        decoded, schema = request.body, REQUESTS[ApiKey.ADD_PARTITIONS_TO_TXN]
    else:
        header = RequestHeader(ApiKey.ADD_PARTITIONS_TO_TXN, version, correlation_id, "any")
        assert b"".join(bytes(chunk) for chunk in encode_response(header, body)) == frame
        decoded = decode_response(ApiKey.ADD_PARTITIONS_TO_TXN, version, frame[4:])[1]
        schema = RESPONSES[ApiKey.ADD_PARTITIONS_TO_TXN]
    assert to_dict(decoded) == normalize(schema, version, body)


def test_verify_only_defaults_to_false_and_v4_is_what_brokers_send_from():
    _id, version, _, body, frame = GOLDEN[2]
    transaction = {key: value for key, value in body["transactions"][0].items() if key != "verify_only"}
    assert encode_request(ApiKey.ADD_PARTITIONS_TO_TXN, version, 32, "kcore-2",
                          {"transactions": [transaction]}) == frame
    assert SUPPORTED_VERSIONS[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)
    assert BROKER_VERSIONS_FROM[ApiKey.ADD_PARTITIONS_TO_TXN] == 4

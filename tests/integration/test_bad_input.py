"""Bad input gets Kafka's error code or closes only its own connection;
the broker keeps serving a well-behaved client on another connection and
no log is corrupted."""
from __future__ import annotations

import os
import struct

import pytest

from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.wire import WireClient, fetch_body, produce_body


def batch(values: list[bytes], **kwargs) -> bytearray:
    return record_codec.build_batch(
        [record_codec.Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k", value=v, headers=[])
         for i, v in enumerate(values)], **kwargs)


def produce(client: WireClient, topic: str, records: bytes, version: int = 7):
    response = client.request(ApiKey.PRODUCE, version, produce_body(topic, 0, records))
    partition = response.responses[0].partition_responses[0]
    return partition.error_code, partition.base_offset


def healthy_round_trip(port: int, topic: str) -> None:
    """A fresh connection can still produce and read back what it wrote."""
    client = WireClient(port)
    try:
        code, offset = produce(client, topic, batch([b"still-alive"]))
        assert code == ErrorCode.NONE
        response = client.request(ApiKey.FETCH, 11, fetch_body(topic, 0, offset))
        data = response.responses[0].partitions[0]
        records = list(record_codec.iter_records(bytes(data.records)))
        assert any(r.value == b"still-alive" and r.offset == offset for r in records)
    finally:
        client.close()


@pytest.fixture
def wire_broker(broker_factory):
    broker = broker_factory({"socket.request.max.bytes": str(1 << 20),
                             "message.max.bytes": str(64 * 1024)})
    client = WireClient(broker.port)
    code, _ = produce(client, "t", batch([b"seed"]))  # auto-creates topic t
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        client.request(ApiKey.METADATA, 8, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        code, _ = produce(client, "t", batch([b"seed"]))
    assert code == ErrorCode.NONE
    client.close()
    return broker


@pytest.mark.parametrize("frame", [
    pytest.param(struct.pack(">i", 12) + os.urandom(12), id="garbage"),
    pytest.param(struct.pack(">i", 2) + b"\x00\x12", id="truncated-header"),
    pytest.param(struct.pack(">i", 1 << 30), id="huge-size-prefix"),
    pytest.param(struct.pack(">i", -5), id="negative-size"),
    pytest.param(struct.pack(">ihhi", 8, 999, 0, 1) + b"\x00\x00" , id="unknown-api-key"),
    pytest.param(struct.pack(">ihhih", 10, 0, 99, 1, -1), id="unsupported-produce-version"),
])
def test_bad_frame_closes_only_that_connection(wire_broker, frame):
    bad = WireClient(wire_broker.port)
    bystander = WireClient(wire_broker.port)
    bad.send_raw(frame)
    assert bad.is_closed_by_peer()
    assert produce(bystander, "t", batch([b"bystander"]))[0] == ErrorCode.NONE
    bystander.close()
    healthy_round_trip(wire_broker.port, "t")
    assert wire_broker.process.poll() is None


def test_truncated_frame_then_disconnect_leaves_broker_serving(wire_broker):
    client = WireClient(wire_broker.port)
    client.send_raw(struct.pack(">i", 1000) + b"\x00" * 100)
    client.close()
    healthy_round_trip(wire_broker.port, "t")


def test_unsupported_api_versions_version_gets_error_35_with_key_list(wire_broker):
    client = WireClient(wire_broker.port)
    # Header v2 as a client from the future sends it: null client id, no tags.
    client.send_raw(struct.pack(">ihhihb", 11, ApiKey.API_VERSIONS, 99, 42, -1, 0))
    frame = client.read_frame()
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    assert (correlation_id, error_code) == (42, ErrorCode.UNSUPPORTED_VERSION)
    keys = {struct.unpack_from(">hhh", frame, 10 + 6 * i)[0] for i in range(count)}
    assert {ApiKey.API_VERSIONS, ApiKey.PRODUCE, ApiKey.FETCH} <= keys
    client.close()


def test_corrupt_batch_is_rejected_and_log_unchanged(wire_broker):
    client = WireClient(wire_broker.port)
    _, before = produce(client, "t", batch([b"a"]))
    corrupt = batch([b"will be corrupted"])
    corrupt[-1] ^= 0xFF  # inside the CRC-covered records
    assert produce(client, "t", bytes(corrupt))[0] == ErrorCode.CORRUPT_MESSAGE
    code, after = produce(client, "t", batch([b"b"]))
    assert code == ErrorCode.NONE and after == before + 1  # nothing was appended in between
    client.close()


def test_large_corrupt_batch_is_cut_back_out_of_the_log(broker_factory):
    """From 256 KiB the CRC is checked while the batch is written: a bad one
    is answered with CORRUPT_MESSAGE and its bytes leave the segment."""
    broker = broker_factory({"socket.request.max.bytes": str(8 << 20),
                             "message.max.bytes": str(4 << 20)})
    client = WireClient(broker.port)
    payload = os.urandom(600 * 1024)
    code, before = produce(client, "big", batch([b"first"]))
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        client.request(ApiKey.METADATA, 8, {"topics": [{"name": "big"}], "allow_auto_topic_creation": True})
        code, before = produce(client, "big", batch([b"first"]))
    assert code == ErrorCode.NONE
    corrupt = batch([payload, payload])
    corrupt[-1] ^= 0xFF
    assert produce(client, "big", bytes(corrupt))[0] == ErrorCode.CORRUPT_MESSAGE
    code, after = produce(client, "big", batch([payload]))
    assert code == ErrorCode.NONE and after == before + 1
    response = client.request(ApiKey.FETCH, 11, fetch_body("big", 0, before, max_bytes=8 << 20))
    records = list(record_codec.iter_records(bytes(response.responses[0].partitions[0].records)))
    assert [(r.offset, r.value) for r in records] == [(before, b"first"), (after, payload)]
    client.close()
    assert broker.process.poll() is None


def test_oversized_batch_gets_message_too_large(wire_broker):
    client = WireClient(wire_broker.port)
    assert produce(client, "t", batch([os.urandom(100 * 1024)]))[0] == ErrorCode.MESSAGE_TOO_LARGE
    client.close()
    healthy_round_trip(wire_broker.port, "t")


def test_two_batches_in_one_partition_is_invalid_record(wire_broker):
    client = WireClient(wire_broker.port)
    two = bytes(batch([b"x"])) + bytes(batch([b"y"]))
    assert produce(client, "t", two)[0] == ErrorCode.INVALID_RECORD
    client.close()


def test_produce_v2_gets_unsupported_version(wire_broker):
    client = WireClient(wire_broker.port)
    assert produce(client, "t", batch([b"x"]), version=2)[0] == ErrorCode.UNSUPPORTED_VERSION
    client.close()


def test_unknown_topic_without_auto_create(broker_factory):
    broker = broker_factory({"auto.create.topics.enable": "false"})
    client = WireClient(broker.port)
    metadata = client.request(ApiKey.METADATA, 8, {"topics": [{"name": "missing"}],
                                                   "allow_auto_topic_creation": True})
    assert metadata.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(client, "missing", batch([b"x"]))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    client.close()


def test_acks_zero_error_closes_connection_without_response(wire_broker):
    client = WireClient(wire_broker.port)
    corrupt = batch([b"x"])
    corrupt[-1] ^= 0xFF
    client.correlation_id += 1
    from kcore import protocol
    client.send_raw(protocol.encode_request(ApiKey.PRODUCE, 7, client.correlation_id, "t",
                                            produce_body("t", 0, bytes(corrupt), acks=0)))
    assert client.is_closed_by_peer()

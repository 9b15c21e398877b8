"""Behaviour of the frame-level API: errors, version ranges, chunks and copies."""
from __future__ import annotations

import io
import struct

import pytest
from kafka.protocol.metadata import ApiVersionsResponse as KafkaPythonApiVersionsResponse

from kcore.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolDecodeError,
    ProtocolEncodeError,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    api_versions_error_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_request_header,
    supported_versions,
)
from kcore.protocol.messages.fetch import FetchResponse
from kcore.protocol.messages.produce import ProduceRequest
from kcore.protocol.primitives import INLINE_RECORDS_MAX


class FileSlice:
    """Stands in for kcore.log.file_slice.FileSlice: bytes that stay in a file."""

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd, self.position, self.size = fd, position, size


def header_only_frame(api_key: int, version: int, correlation_id: int = 11, tags: bytes = b"") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, 3) + b"cli" + tags


def fetch_response(partitions: list) -> dict:
    return {"responses": [{"topic": "t", "partitions": partitions}]}


def test_advertised_ranges_hold_what_librdkafka_and_the_python_clients_need():
    versions = supported_versions()
    assert versions == SUPPORTED_VERSIONS
    assert list(versions) == sorted(versions)

    def serves(key, version):
        low, high = versions[key]
        return low <= version <= high

    # librdkafka < 2.11.1 matches features to single versions
    # (docs/protocol.md#what-clients-rely-on).
    for key, version in [(ApiKey.PRODUCE, 0), (ApiKey.PRODUCE, 3), (ApiKey.PRODUCE, 7), (ApiKey.FETCH, 4),
                         (ApiKey.FETCH, 10), (ApiKey.INIT_PRODUCER_ID, 0), (ApiKey.LIST_OFFSETS, 1),
                         (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.API_VERSIONS, 3)]:
        assert serves(key, version), (key, version)
    # aiokafka opens with ApiVersions v0 and asks Metadata up to v5.
    assert serves(ApiKey.API_VERSIONS, 0) and serves(ApiKey.METADATA, 5)
    # Fetch reaches Kafka 4.2's v18 (v13+ name topics by id). kafka-python reads
    # ListOffsets v11 as Kafka 4.2 and DescribeLogDirs v5 as 4.3 (record v2,
    # zstd, fetch sessions and more).
    assert versions[ApiKey.FETCH] == (4, 18)
    assert versions[ApiKey.LIST_OFFSETS] == (1, 11)
    assert versions[ApiKey.DESCRIBE_CLUSTER] == (0, 1)


def test_unknown_api_key_raises_with_the_parsed_header():
    unserved = next(key for key in ApiKey if key not in SUPPORTED_VERSIONS)
    for api_key in (unserved, 1000, -1):
        with pytest.raises(UnknownApiKeyError) as raised:
            decode_request(header_only_frame(api_key, 0, correlation_id=77))
        assert raised.value.header == RequestHeader(api_key, 0, 77, "cli")


def test_controlled_shutdown_v0_header_has_no_client_id():
    frame = struct.pack(">hhi", ApiKey.CONTROLLED_SHUTDOWN, 0, 31) + struct.pack(">i", 2)  # broker_id 2
    assert read_request_header(memoryview(frame)) == (RequestHeader(7, 0, 31, None), 8)
    request = decode_request(frame)
    assert request.header == RequestHeader(7, 0, 31, None) and request.body.broker_id == 2
    assert encode_request(ApiKey.CONTROLLED_SHUTDOWN, 0, 31, "dropped", {"broker_id": 2})[4:] == frame


def test_truncated_headers_raise_protocol_decode_error():
    whole = header_only_frame(ApiKey.METADATA, 1)
    for cut in range(len(whole)):
        with pytest.raises(ProtocolDecodeError):
            read_request_header(memoryview(whole[:cut]))


@pytest.mark.parametrize("api_key,version", [(ApiKey.FETCH, 3), (ApiKey.FETCH, 19), (ApiKey.PRODUCE, 14),
                                             (ApiKey.METADATA, 14), (ApiKey.LIST_OFFSETS, 0)])
def test_version_outside_the_supported_range_raises_with_the_parsed_header(api_key, version):
    tags = b"\x00" if version >= 9 else b""
    with pytest.raises(UnsupportedVersionError) as raised:
        decode_request(header_only_frame(api_key, version, tags=tags))
    assert raised.value.header == RequestHeader(api_key, version, 11, "cli")


def test_api_versions_v4_header_is_read_as_header_v2():
    frame = header_only_frame(ApiKey.API_VERSIONS, 4, tags=b"\x00") + b"\x04kcp\x0423.\x00"
    header, offset = read_request_header(memoryview(frame))
    assert header == RequestHeader(18, 4, 11, "cli") and offset == 14
    with pytest.raises(UnsupportedVersionError):
        decode_request(frame)


def test_api_versions_error_response_is_v0_with_error_35_and_every_served_key():
    chunks = api_versions_error_response(RequestHeader(18, 4, 99, "kafka-python"))
    frame = b"".join(chunks)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    correlation_id, body = decode_response(18, 0, frame[4:])
    assert correlation_id == 99
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    served = {entry.api_key: (entry.min_version, entry.max_version) for entry in body.api_keys}
    assert served == {int(key): span for key, span in SUPPORTED_VERSIONS.items()}
    # kafka-python, which sent v4, reads it as it would from Kafka (body as v0).
    theirs = KafkaPythonApiVersionsResponse.decode(io.BytesIO(frame[8:]), version=4)
    assert theirs.error_code == 35 and len(theirs.api_keys) == len(SUPPORTED_VERSIONS)


def test_truncated_frames_raise_protocol_decode_error():
    body = {"acks": 1, "timeout_ms": 5, "topic_data": [{"name": "t", "partition_data": [{"index": 0,
                                                                                         "records": b"abc"}]}]}
    frame = encode_request(0, 7, 1, "c", body)[4:]
    for cut in range(len(frame)):
        with pytest.raises(ProtocolDecodeError):
            decode_request(frame[:cut])


def test_bytes_after_the_last_field_are_counted_and_ignored_as_kafka_does():
    body = {"acks": 1, "timeout_ms": 5, "topic_data": [{"name": "t", "partition_data": [{"index": 0,
                                                                                         "records": b"abc"}]}]}
    frame = encode_request(0, 7, 1, "c", body)[4:]
    assert decode_request(frame).trailing_bytes == 0
    padded = decode_request(frame + b"\x00\x01\x02")
    assert padded.trailing_bytes == 3
    assert padded.body.acks == 1 and padded.body.timeout_ms == 5
    assert bytes(padded.body.topic_data[0].partition_data[0].records) == b"abc"


def test_null_in_a_non_nullable_field_is_a_decode_error():
    frame = struct.pack(">hhih", 3, 0, 1, -1) + struct.pack(">ih", 1, -1)  # Metadata v0, topic name null
    with pytest.raises(ProtocolDecodeError, match="name"):
        decode_request(frame)


def test_unknown_tagged_fields_in_header_and_body_are_skipped():
    unknown_tag = b"\x01\x2a\x03xyz"  # one field: tag 42, 3 bytes
    frame = (header_only_frame(18, 3, tags=unknown_tag) + b"\x02a\x02b" + unknown_tag)
    request = decode_request(frame)
    assert (request.body.client_software_name, request.body.client_software_version) == ("a", "b")


def test_produce_records_are_slices_of_the_frame_not_copies():
    batches = [bytes([index]) * 2000 for index in range(16)]
    body = ProduceRequest(acks=1, timeout_ms=100, topic_data=[
        {"name": "t", "partition_data": [{"index": i, "records": batch} for i, batch in enumerate(batches)]}])
    frame = bytearray(encode_request(0, 7, 1, "c", body)[4:])
    decoded = decode_request(memoryview(frame)).body
    for index, partition in enumerate(decoded.topic_data[0].partition_data):
        assert partition.records.obj is frame
        assert partition.records == batches[index]
    frame[-1] ^= 0xFF  # the views see the frame's bytes, so they see the change
    assert decoded.topic_data[0].partition_data[-1].records[-1] == batches[-1][-1] ^ 0xFF


def test_file_slices_pass_through_and_the_size_prefix_counts_them():
    slices = [FileSlice(5, 4096 * i, 100_000 + i) for i in range(3)]
    body = fetch_response([{"partition_index": i, "records": s} for i, s in enumerate(slices)])
    chunks = encode_response(RequestHeader(1, 11, 3, "c"), body)
    assert [chunk for chunk in chunks if isinstance(chunk, FileSlice)] == slices
    in_memory = sum(len(chunk) for chunk in chunks if not isinstance(chunk, FileSlice))
    size = struct.unpack_from(">i", chunks[0])[0]
    assert size == in_memory - 4 + sum(s.size for s in slices)


def test_small_record_buffers_are_copied_inline_and_large_ones_passed_through():
    small, large = b"s" * INLINE_RECORDS_MAX, memoryview(b"L" * (INLINE_RECORDS_MAX + 1))
    chunks = encode_response(RequestHeader(1, 11, 3, "c"), fetch_response(
        [{"partition_index": 0, "records": small}, {"partition_index": 1, "records": large}]))
    assert any(chunk is large for chunk in chunks)
    assert not any(chunk is small for chunk in chunks)
    _, decoded = decode_response(1, 11, b"".join(bytes(chunk) for chunk in chunks)[4:])
    assert [bytes(p.records) for p in decoded.responses[0].partitions] == [small, bytes(large)]


def test_records_given_as_a_list_of_chunks_are_one_field():
    pieces = [b"a" * 10, FileSlice(3, 0, 1000), memoryview(b"b" * 600)]
    chunks = encode_response(RequestHeader(1, 11, 3, "c"),
                             fetch_response([{"partition_index": 0, "records": pieces}]))
    assert chunks[1] is pieces[1] and chunks[2] is pieces[2]
    length_prefix = struct.unpack_from(">i", chunks[0], len(chunks[0]) - 4 - 10)[0]
    assert length_prefix == 1610


@pytest.mark.parametrize("version", [11, 12])  # a classic and a flexible version
def test_empty_records_of_every_form_encode_as_a_zero_length(version):
    """b"" has its own path in the generated encoder (a full fetch's
    partitions with nothing new): it must write what the other empty
    forms write, and null stay null."""
    def encoded(records):
        chunks = encode_response(RequestHeader(1, version, 3, "c"),
                                 fetch_response([{"partition_index": 0, "records": records}]))
        return b"".join(bytes(chunk) for chunk in chunks)

    empty = encoded(b"")
    assert empty == encoded(bytearray()) == encoded(memoryview(b"")) == encoded([])
    _, decoded = decode_response(1, version, empty[4:])
    assert bytes(decoded.responses[0].partitions[0].records) == b""
    _, decoded = decode_response(1, version, encoded(None)[4:])
    assert decoded.responses[0].partitions[0].records is None


def test_encode_request_refuses_file_slices():
    body = {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": FileSlice(3, 0, 10)}]}]}
    with pytest.raises(ProtocolEncodeError, match="file slice"):
        encode_request(0, 7, 1, "c", body)


class Partition:
    """An unrelated class with the right attributes: encoders take it too."""

    def __init__(self, partition_index: int, high_watermark: int) -> None:
        self.partition_index = partition_index
        self.high_watermark = high_watermark


def test_dicts_data_objects_and_plain_objects_encode_alike():
    header = RequestHeader(1, 11, 3, "c")
    as_dict = fetch_response([{"partition_index": 2, "high_watermark": 10}])
    as_object = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic="t", partitions=[FetchResponse.PartitionData(partition_index=2, high_watermark=10)])])
    as_plain = fetch_response([Partition(2, 10)])
    assert encode_response(header, as_dict) == encode_response(header, as_object) == encode_response(
        header, as_plain)


def test_missing_fields_take_the_schema_defaults():
    _, decoded = decode_response(1, 11, b"".join(
        encode_response(RequestHeader(1, 11, 3, "c"), fetch_response([{}])))[4:])
    partition = decoded.responses[0].partitions[0]
    assert (partition.last_stable_offset, partition.log_start_offset, partition.preferred_read_replica) == (
        -1, -1, -1)
    assert partition.records is None and partition.aborted_transactions == []


@pytest.mark.parametrize("body,match", [
    ({"responses": [{"topic": None}]}, "topic"),
    ({"throttle_time_ms": 2**31}, "FetchResponse"),
    ({"responses": [{"topic": 5}]}, "FetchResponse"),
    ({"responses": [{"partitions": [{"records": object()}]}]}, "records"),
])
def test_bad_values_raise_protocol_encode_error(body, match):
    with pytest.raises(ProtocolEncodeError, match=match):
        encode_response(RequestHeader(1, 11, 3, "c"), body)


class _NotRecords:
    """A type no other test uses: what the encoders learn of it is this test's."""


def test_a_bad_records_value_is_refused_by_name_every_time():
    """The first bad value of a type must not teach the encoders that the
    type is a file slice: the second would then fail on its missing size
    without naming the records field."""
    body = {"responses": [{"partitions": [{"records": _NotRecords()}]}]}
    for _ in range(2):
        with pytest.raises(ProtocolEncodeError, match="records chunk"):
            encode_response(RequestHeader(1, 11, 3, "c"), body)


def test_encoding_outside_the_supported_versions_is_refused():
    with pytest.raises(ProtocolEncodeError):
        encode_response(RequestHeader(1, 19, 3, "c"), {})
    with pytest.raises(ProtocolEncodeError):
        encode_request(1, 3, 1, "c", {})
    with pytest.raises(ProtocolDecodeError):
        decode_response(1, 19, b"\x00\x00\x00\x01")


def test_requests_round_trip_with_correlation_id_and_null_client_id():
    frame = encode_request(ApiKey.HEARTBEAT, 3, 2**31 - 1, None, {"group_id": "g", "generation_id": 4,
                                                                   "member_id": "m"})
    request = decode_request(frame[4:])
    assert request.correlation_id == 2**31 - 1 and request.header.client_id is None
    assert (request.api_key, request.api_version) == (12, 3)
    assert (request.body.group_id, request.body.generation_id, request.body.group_instance_id) == ("g", 4, None)

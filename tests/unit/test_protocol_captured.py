"""Request frames captured from the real clients (tests/unit/golden/capture.py).

librdkafka (confluent-kafka 2.16), kafka-python 3.0 and aiokafka 0.14 each
produced one message and consumed it back through a kcore.protocol broker
(captured again for Produce and Metadata once kcore served Produce 13 and
Metadata 13).
Every frame must decode, and re-encoding the decoded body must give the
client's bytes back exactly.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kcore.protocol import (
    ApiKey,
    UnsupportedVersionError,
    decode_request,
    encode_request,
    is_supported,
    read_request_header,
)

GOLDEN = Path(__file__).parent / "golden"
FRAMES = sorted(GOLDEN.glob("*_request_v*_*.bin"))
NAME = re.compile(r"(?P<api>[a-z_]+)_request_v(?P<version>\d+)_(?P<client>[a-z-]+)\.bin")


def frame(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def test_captures_cover_each_client_producing_and_fetching():
    captured = {NAME.fullmatch(path.name).group("api", "client") for path in FRAMES}
    for client in ("librdkafka", "kafka-python", "aiokafka"):
        for api in ("api_versions", "metadata", "produce", "fetch", "list_offsets"):
            assert (api, client) in captured


@pytest.mark.parametrize("path", FRAMES, ids=[path.name for path in FRAMES])
def test_captured_frame_decodes_and_re_encodes_to_the_same_bytes(path):
    parts = NAME.fullmatch(path.name)
    api_key, version = ApiKey[parts["api"].upper()], int(parts["version"])
    data = path.read_bytes()
    if not is_supported(api_key, version):
        with pytest.raises(UnsupportedVersionError) as raised:
            decode_request(data)
        assert (raised.value.header.api_key, raised.value.header.api_version) == (api_key, version)
        return
    request = decode_request(data)
    assert (request.api_key, request.api_version) == (api_key, version)
    header = request.header
    again = encode_request(api_key, version, header.correlation_id, header.client_id, request.body)
    assert again[4:] == data


def test_kafka_python_opens_with_api_versions_v4_and_its_header_is_still_readable():
    header, _offset = read_request_header(memoryview(frame("api_versions_request_v4_kafka-python.bin")))
    assert (header.api_version, header.client_id) == (4, "kafka-python-producer-1")


def test_clients_announce_their_software_in_api_versions_v3():
    names = {client: decode_request(frame(f"api_versions_request_v3_{client}.bin")).body.client_software_name
             for client in ("librdkafka", "kafka-python")}
    assert names == {"librdkafka": "confluent-kafka-python", "kafka-python": "kafka-python"}


# The highest Produce and Metadata versions each client knows (their
# sources; docs/protocol.md#client-versions): with kcore serving Produce
# 0-13 and Metadata 0-13, each sends its own highest.
HIGHEST_KNOWN = {"librdkafka": {"produce": 10, "metadata": 13},
                 "kafka-python": {"produce": 9, "metadata": 13},
                 "aiokafka": {"produce": 7, "metadata": 5}}


@pytest.mark.parametrize("client", list(HIGHEST_KNOWN))
def test_each_client_sends_the_highest_produce_and_metadata_version_it_knows(client):
    for api, version in HIGHEST_KNOWN[client].items():
        sent = {int(NAME.fullmatch(path.name)["version"]) for path in FRAMES
                if NAME.fullmatch(path.name).group("api", "client") == (api, client)}
        assert sent == {version}, api


@pytest.mark.parametrize("client", list(HIGHEST_KNOWN))
def test_produce_carries_one_v2_batch_viewed_in_place(client):
    data = frame(f"produce_request_v{HIGHEST_KNOWN[client]['produce']}_{client}.bin")
    body = decode_request(data).body
    (partition,) = body.topic_data[0].partition_data
    records = partition.records
    assert records.obj is data
    assert records[16] == 2  # magic
    assert int.from_bytes(records[8:12], "big") + 12 == len(records)  # batchLength covers the rest
    assert (body.acks, body.topic_data[0].name) == (-1, "golden")


def test_librdkafka_fetches_read_committed_and_the_python_clients_read_uncommitted():
    levels = {client: decode_request(frame(f"fetch_request_v11_{client}.bin")).body.isolation_level
              for client in ("librdkafka", "kafka-python", "aiokafka")}
    assert levels == {"librdkafka": 1, "kafka-python": 0, "aiokafka": 0}


@pytest.mark.parametrize("client", ["librdkafka", "kafka-python", "aiokafka"])
def test_admin_clients_send_delete_records_v2_naming_the_offset(client):
    body = decode_request(frame(f"delete_records_request_v2_{client}.bin")).body
    (topic,) = body.topics
    assert (topic.name, [(p.partition_index, p.offset) for p in topic.partitions]) == ("golden", [(0, 1)])
    assert body.timeout_ms > 0


def test_librdkafka_and_kafka_python_fetch_at_v12_without_a_last_fetched_epoch():
    for client in ("librdkafka", "kafka-python"):
        body = decode_request(frame(f"fetch_request_v12_{client}.bin")).body
        (partition,) = body.topics[0].partitions
        assert (partition.last_fetched_epoch, body.cluster_id, body.rack_id) == (-1, None, "")


def test_list_offsets_at_the_highest_version_each_client_knows():
    assert decode_request(frame("list_offsets_request_v7_librdkafka.bin")).body.isolation_level == 1
    assert decode_request(frame("list_offsets_request_v11_kafka-python.bin")).body.timeout_ms == 0

"""Broker behaviour checked with exact requests: fetch sizing (KIP-74),
long-poll, idempotent retries across restarts, topic-level conversions."""
from __future__ import annotations

import os
import threading
import time

from kcore import protocol
from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.wire import WireClient, batch, create_topic, fetch, fetch_body, produce, produce_body


def test_fetch_inside_batch_returns_whole_batch(broker):
    client = WireClient(broker.port)
    create_topic(client, "t")
    produce(client, "t", batch([b"a", b"b", b"c"]))
    produce(client, "t", batch([b"d"]))
    data = fetch(client, "t", 1)
    batches = list(record_codec.iter_batches(bytes(data.records)))
    assert batches[0].base_offset == 0 and batches[0].last_offset == 2
    assert [r.value for r in record_codec.iter_records(bytes(data.records))] == [b"a", b"b", b"c", b"d"]
    assert data.high_watermark == 4


def test_pipelined_mixed_requests_sent_in_one_write_are_answered_in_order(broker):
    """Responses ready together leave in one writev, but never out of order,
    nor mixed up with fetch data that goes out by sendfile in between."""
    client = WireClient(broker.port)
    create_topic(client, "mixed")
    produce(client, "mixed", batch([b"first"]))
    requests = []
    for i in range(30):
        kind = ("produce", "fetch", "metadata")[i % 3]
        if kind == "produce":
            requests.append((ApiKey.PRODUCE, 7, produce_body("mixed", 0, bytes(batch([b"v%d" % i])))))
        elif kind == "fetch":
            requests.append((ApiKey.FETCH, 11, fetch_body("mixed", 0, 0)))
        else:
            requests.append((ApiKey.METADATA, 8, {"topics": [{"name": "mixed"}],
                                                  "allow_auto_topic_creation": False}))
    frames = [protocol.encode_request(key, version, 1000 + i, "kcore-tests", body)
              for i, (key, version, body) in enumerate(requests)]
    client.send_raw(b"".join(frames))  # one write: the broker reads several per turn
    produced = 0
    for i, (key, version, _) in enumerate(requests):
        correlation_id, response = protocol.decode_response(key, version, client.read_frame())
        assert correlation_id == 1000 + i
        if key == ApiKey.PRODUCE:
            produced += 1
            assert response.responses[0].partition_responses[0].base_offset == produced
        elif key == ApiKey.FETCH:
            values = [r.value for r in record_codec.iter_records(bytes(response.responses[0].partitions[0].records))]
            assert values[0] == b"first" and len(values) >= produced  # what was appended before it
        else:
            assert response.topics[0].name == "mixed"
    client.close()


def test_oversized_first_batch_is_returned_whole(broker):
    client = WireClient(broker.port)
    create_topic(client, "t")
    big = os.urandom(200_000)
    produce(client, "t", batch([big]))
    produce(client, "t", batch([b"next"]))
    data = fetch(client, "t", 0, max_bytes=1000, partition_max_bytes=1000)
    values = [r.value for r in record_codec.iter_records(bytes(data.records))]
    assert values == [big]  # at least one batch, and only that one


def test_long_poll_wakes_on_append_and_times_out_otherwise(broker):
    client = WireClient(broker.port)
    create_topic(client, "t")
    started = time.monotonic()
    empty = fetch(client, "t", 0, max_wait_ms=400)
    waited = time.monotonic() - started
    assert empty.records in (b"", None) or len(empty.records) == 0
    assert 0.35 <= waited < 5

    def produce_later():
        time.sleep(0.3)
        other = WireClient(broker.port)
        produce(other, "t", batch([b"wake"]))
        other.close()

    thread = threading.Thread(target=produce_later)
    thread.start()
    started = time.monotonic()
    data = fetch(client, "t", 0, max_wait_ms=10_000)
    waited = time.monotonic() - started
    thread.join()
    assert [r.value for r in record_codec.iter_records(bytes(data.records))] == [b"wake"]
    assert waited < 5  # woken by the append, far before max_wait_ms


def init_producer(client):
    response = client.request(ApiKey.INIT_PRODUCER_ID, 1,
                              {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert response.error_code == ErrorCode.NONE
    return response.producer_id, response.producer_epoch


def test_idempotent_retry_after_sigkill_returns_original_offset(broker):
    client = WireClient(broker.port)
    create_topic(client, "t")
    pid, epoch = init_producer(client)
    offsets = []
    for seq in range(0, 30, 3):
        data = batch([b"x%d" % seq, b"y", b"z"], producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        offsets.append(produce(client, "t", data, acks=-1).base_offset)
    client.close()
    broker.restart(clean=False)
    client = WireClient(broker.port)
    retry = batch([b"x27", b"y", b"z"], producer_id=pid, producer_epoch=epoch, base_sequence=27)
    result = produce(client, "t", retry, acks=-1)
    assert (result.error_code, result.base_offset) == (ErrorCode.NONE, offsets[-1])
    gap = batch([b"gap"], producer_id=pid, producer_epoch=epoch, base_sequence=40)
    assert produce(client, "t", gap).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    following = batch([b"next"], producer_id=pid, producer_epoch=epoch, base_sequence=30)
    result = produce(client, "t", following)
    assert (result.error_code, result.base_offset) == (ErrorCode.NONE, 30)
    assert fetch(client, "t", 0).high_watermark == 31  # nothing was written twice
    assert init_producer(client)[0] != pid  # ids are never reused after a restart


def test_topic_compression_type_recompresses_and_log_append_time_stamps(broker):
    client = WireClient(broker.port)
    create_topic(client, "z", configs={"compression.type": "zstd",
                                       "message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    result = produce(client, "z", batch([b"v" * 1000] * 20, codec=1))  # gzip from the producer
    assert result.error_code == ErrorCode.NONE and result.log_append_time_ms >= before
    stored = next(record_codec.iter_batches(bytes(fetch(client, "z", 0).records)))
    assert stored.is_valid() and stored.compression == 4
    assert stored.timestamp_type == record_codec.TimestampType.LOG_APPEND_TIME
    assert [r.value for r in stored.records()] == [b"v" * 1000] * 20
    assert all(r.timestamp == result.log_append_time_ms for r in stored.records())


def test_describe_configs_lists_every_topic_key_with_sources(broker):
    client = WireClient(broker.port)
    create_topic(client, "d", configs={"retention.ms": "1234"})
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 2, "resource_name": "d", "configuration_keys": None}],
        "include_synonyms": True})
    configs = {c.name: c for c in response.results[0].configs}
    assert configs["retention.ms"].value == "1234" and configs["retention.ms"].config_source == 1
    assert configs["segment.bytes"].value == "1073741824" and configs["segment.bytes"].config_source == 5
    assert {"cleanup.policy", "max.message.bytes", "compression.type", "min.insync.replicas"} <= set(configs)


def test_incremental_alter_and_bad_config_value(broker):
    client = WireClient(broker.port)
    create_topic(client, "a")

    def alter(name, value, op=0):
        response = client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {
            "resources": [{"resource_type": 2, "resource_name": "a",
                           "configs": [{"name": name, "config_operation": op, "value": value}]}],
            "validate_only": False})
        return response.responses[0].error_code

    assert alter("retention.ms", "5000") == ErrorCode.NONE
    assert alter("retention.ms", "soon") == ErrorCode.INVALID_CONFIG
    assert alter("no.such.key", "1") == ErrorCode.INVALID_CONFIG
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 2, "resource_name": "a", "configuration_keys": ["retention.ms"]}],
        "include_synonyms": False})
    assert [(c.name, c.value) for c in response.results[0].configs] == [("retention.ms", "5000")]


def test_min_insync_replicas_above_one_refuses_acks_all(broker):
    client = WireClient(broker.port)
    create_topic(client, "m", configs={"min.insync.replicas": "2"})
    assert produce(client, "m", batch([b"x"]), acks=-1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce(client, "m", batch([b"x"]), acks=1).error_code == ErrorCode.NONE


def test_unclean_restart_keeps_topics_and_data(broker):
    client = WireClient(broker.port)
    create_topic(client, "r", partitions=3)
    for p in range(3):
        produce(client, "r", batch([b"p%d" % p]), partition=p)
    client.close()
    broker.restart(clean=False)
    client = WireClient(broker.port)
    metadata = client.request(ApiKey.METADATA, 8, {"topics": [{"name": "r"}], "allow_auto_topic_creation": False})
    assert len(metadata.topics[0].partitions) == 3
    assert [r.value for r in record_codec.iter_records(bytes(fetch(client, "r", 0).records))] == [b"p0"]


def test_incremental_append_starts_from_default_and_only_for_lists(broker):
    client = WireClient(broker.port)
    create_topic(client, "q")

    def change(name, value, op):
        response = client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {
            "resources": [{"resource_type": 2, "resource_name": "q",
                           "configs": [{"name": name, "config_operation": op, "value": value}]}],
            "validate_only": False})
        return response.responses[0].error_code

    assert change("cleanup.policy", "compact", 2) == ErrorCode.NONE
    assert change("retention.ms", "1", 2) == ErrorCode.INVALID_CONFIG
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 2, "resource_name": "q", "configuration_keys": ["cleanup.policy"]}],
        "include_synonyms": False})
    assert set(response.results[0].configs[0].value.split(",")) == {"compact", "delete"}

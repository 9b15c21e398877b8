"""Broker behaviours real clients rely on beyond a plain round trip.

Long-poll wake-up, KIP-74 oversized first batches, fetching from inside a
batch, LogAppendTime, max.message.bytes, topic-level recompression,
min.insync.replicas, idempotent producer state across broker restarts,
concurrent producers and a live-tailing consumer, broker configs,
validate-only creation, and delete then re-create. Driven by
confluent-kafka and kafka-python, the two clients with the widest API use.
"""
from __future__ import annotations

import logging
import os
import struct
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import MessageSizeTooLargeError, NotEnoughReplicasError

from tests.support import confluent, kafka_python
from tests.support.compat import (
    BROKER_ID,
    DEFAULT_SEGMENT_BYTES,
    PARTITIONS,
    READ_TIMEOUT_S,
    Message,
    assert_exactly_once,
    assert_same_partitions,
    by_partition,
    idempotence_messages,
    make_messages,
    now_ms,
    received,
    start_broker,
    unique_topic,
    wait_until,
)

ADMIN_TIMEOUT_S = confluent.ADMIN_TIMEOUT_S
LOG_APPEND_TIME = 1  # kafka-python's timestamp_type for LogAppendTime
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def create_topic(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = confluent.admin_client(bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(ADMIN_TIMEOUT_S)


def stored_codecs(data_dir: Path, topic: str) -> set[int]:
    """Codec ids (attributes bits 0-2) of every batch in the topic's .log
    files: baseOffset i64, batchLength i32, leader epoch i32, magic i8,
    crc u32, then attributes i16 at byte 21 (docs/protocol.md#record-batch-v2)."""
    codecs = set()
    for log_file in data_dir.glob(f"{topic}-*/*.log"):
        data = log_file.read_bytes()
        position = 0
        while position + 23 <= len(data):
            batch_length, = struct.unpack_from(">i", data, position + 8)
            if batch_length <= 0:
                break
            attributes, = struct.unpack_from(">h", data, position + 21)
            codecs.add(attributes & 0x7)
            position += 12 + batch_length
    return codecs


def test_consumer_in_long_poll_gets_new_messages_well_before_fetch_wait_max(shared_broker):
    topic, warm_up = unique_topic("sem-long-poll"), unique_topic("sem-warm-up")
    create_topic(shared_broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 0})
    producer.produce(warm_up, b"connect first")
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": "kcore-compat-assign-only",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10_000})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        assert consumer.consume(1, 1.0) == []
        latencies = []
        for index in range(3):
            time.sleep(0.3)  # the empty fetch is parked in the broker
            sent = time.monotonic()
            producer.produce(topic, f"wake-{index}".encode(), partition=0)
            producer.flush(10)
            [record] = consumer.consume(1, 12.0)
            assert record.error() is None and record.value() == f"wake-{index}".encode()
            latencies.append(time.monotonic() - sent)
    finally:
        consumer.close()
    # A fetch that only ends at fetch.wait.max.ms (10 s) would make each of
    # these a uniform 0-10 s wait; an append must wake it at once.
    assert max(latencies) < 1.5, f"latencies {latencies}"


def test_oversized_first_batch_is_returned_despite_tiny_fetch_limits(shared_broker):
    topic = unique_topic("sem-kip74")
    messages = [Message(0, f"big-{i}".encode(), os.urandom(200_000), (), now_ms() + i) for i in range(5)]
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"linger.ms": 0})

    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_bytes=16_384, max_partition_fetch_bytes=16_384, fetch_max_wait_ms=100)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        values, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(values) < len(messages) and time.monotonic() < deadline:
            values += [r.value for records in consumer.poll(timeout_ms=500).values() for r in records]
    finally:
        consumer.close()
    assert values == [m.value for m in messages]


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_fetch_from_inside_a_batch_starts_at_the_requested_offset(shared_broker, codec):
    topic = unique_topic(f"sem-inside-{codec}")
    messages = [Message(0, None, f"inside-{i}".encode(), (), now_ms()) for i in range(500)]
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"linger.ms": 200, "compression.type": codec})

    consumer = confluent.new_consumer(shared_broker.bootstrap)
    try:
        consumer.assign([TopicPartition(topic, 0, 137)])
        offsets, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(offsets) < 500 - 137 and time.monotonic() < deadline:
            for record in consumer.consume(1000, 0.5):
                assert record.error() is None, record.error()
                assert record.value() == f"inside-{record.offset()}".encode()
                offsets.append(record.offset())
    finally:
        consumer.close()
    assert offsets == list(range(137, 500))


def test_log_append_time_topic_stamps_records_with_the_broker_clock(shared_broker):
    topic = unique_topic("sem-append-time")
    create_topic(shared_broker.bootstrap, topic, 2, **{"message.timestamp.type": "LogAppendTime"})
    messages = make_messages(400, "append-time", partitions=2, base_timestamp=1_000_000)
    before = now_ms()
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"compression.type": "zstd"})
    after = now_ms()

    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": "kcore-compat-assign-only",
                         "check.crcs": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
        records, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(records) < len(messages) and time.monotonic() < deadline:
            records += consumer.consume(1000, 0.5)
    finally:
        consumer.close()
    assert all(r.error() is None for r in records)
    assert sorted(r.value() for r in records) == sorted(m.value for m in messages)
    for record in records:
        timestamp_type, timestamp = record.timestamp()
        assert timestamp_type == TIMESTAMP_LOG_APPEND_TIME
        assert before - 1000 <= timestamp <= after + 1000

    kp_records = kafka_python_read_all(shared_broker.bootstrap, topic, 2, len(messages))
    assert {r.timestamp_type for r in kp_records} == {LOG_APPEND_TIME}  # kafka-python checks CRCs


def kafka_python_read_all(bootstrap: str, topic: str, partitions: int, count: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100, check_crcs=True)
    try:
        assigned = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        records, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(records) < count and time.monotonic() < deadline:
            records += [r for batch in consumer.poll(timeout_ms=500).values() for r in batch]
        return records
    finally:
        consumer.close()


def test_record_batch_above_topic_max_message_bytes_is_refused_with_message_too_large(shared_broker):
    topic = unique_topic("sem-too-large")
    create_topic(shared_broker.bootstrap, topic, **{"max.message.bytes": "10000"})
    with pytest.raises(AssertionError, match="MSG_SIZE_TOO_LARGE"):
        confluent.produce(shared_broker.bootstrap, topic, [Message(0, None, os.urandom(20_000), (), now_ms())])

    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, enable_idempotence=False, acks=1, retries=0)
    try:
        refused = producer.send(topic, os.urandom(20_000), partition=0)
        accepted = producer.send(topic, os.urandom(5_000), partition=0)
        producer.flush(30)
    finally:
        producer.close(timeout=10)
    assert isinstance(refused.exception, MessageSizeTooLargeError)
    assert accepted.succeeded() and accepted.value.offset == 0, "the refused batch left the log unchanged"


@pytest.mark.parametrize("topic_codec, stored", [("gzip", "gzip"), ("producer", "lz4"), ("uncompressed", "none"),
                                                 ("zstd", "zstd")])
def test_topic_compression_type_decides_the_codec_stored_on_disk(shared_broker, topic_codec, stored):
    topic = unique_topic(f"sem-codec-{topic_codec}")
    create_topic(shared_broker.bootstrap, topic, 2, **{"compression.type": topic_codec})
    # librdkafka sends a batch uncompressed when lz4 would make it larger,
    # as a lone short record under load is (its frame adds ~20 bytes): a
    # 512-byte run makes every batch, even of one record, shrink.
    messages = [replace(m, value=m.value + b"v" * 512)
                for m in make_messages(300, f"codec-{topic_codec}", partitions=2)]
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"compression.type": "lz4"})

    assert stored_codecs(shared_broker.data_dir, topic) == {CODEC_IDS[stored]}
    assert_same_partitions(messages, confluent.consume(shared_broker.bootstrap, topic, partitions=range(2)))


def test_acks_all_below_min_insync_replicas_fails_with_not_enough_replicas(shared_broker):
    topic = unique_topic("sem-min-isr")
    create_topic(shared_broker.bootstrap, topic, **{"min.insync.replicas": "2"})
    outcomes = {}
    for acks in ("all", 1):
        producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, enable_idempotence=False,
                                 acks=acks, retries=0)
        try:
            outcomes[acks] = producer.send(topic, b"needs two replicas", partition=0)
            producer.flush(30)
        finally:
            producer.close(timeout=10)
    assert isinstance(outcomes["all"].exception, NotEnoughReplicasError)
    assert outcomes[1].succeeded() and outcomes[1].value.offset == 0


@pytest.mark.timeout(150)
def test_idempotent_producer_keeps_going_across_clean_and_sigkill_broker_restarts(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("sem-idempotent-restart")
    messages = idempotence_messages(9000, "restart")
    errors = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
                         "error_cb": errors.append})

    def send(chunk: list[Message]) -> None:
        failed = []
        for m in chunk:
            producer.produce(topic, m.value, m.key, partition=m.partition, timestamp=m.timestamp,
                             on_delivery=lambda error, _msg: error and failed.append(error))
            producer.poll(0)
        assert producer.flush(60) == 0
        assert not failed, failed[:3]

    try:
        send(messages[:3000])
        assert broker.stop() == 0
        broker.start()
        send(messages[3000:6000])
        broker.restart(clean=False)
        send(messages[6000:])
        assert not [e for e in errors if e.fatal()], errors
        assert_exactly_once(messages, confluent.consume(broker.bootstrap, topic))
    finally:
        broker.kill()


@pytest.mark.timeout(120)
def test_concurrent_producers_interleave_without_losing_or_reordering(shared_broker):
    topic, producers = unique_topic("sem-concurrent"), 4
    batches = [make_messages(10_000, f"producer{n}", base_timestamp=now_ms() - n * 100_000)
               for n in range(producers)]
    failures = []

    def run(messages: list[Message]) -> None:
        try:
            confluent.produce(shared_broker.bootstrap, topic, messages)
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(batch,)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    consumed = confluent.consume(shared_broker.bootstrap, topic)
    for batch in batches:
        wanted = set(batch)
        mine = [m for m in consumed if m in wanted]
        assert_same_partitions(batch, mine)
    assert len(consumed) == sum(len(b) for b in batches)


@pytest.mark.timeout(120)
def test_consumer_tailing_a_topic_while_it_is_written_sees_every_message_in_order(shared_broker):
    topic, messages = unique_topic("sem-tail"), make_messages(30_000, "tail")
    confluent.produce(shared_broker.bootstrap, topic, messages[:10])  # topic exists before the reader starts
    writer = threading.Thread(target=confluent.produce, args=(shared_broker.bootstrap, topic, messages[10:]),
                              kwargs={"linger.ms": 1})
    consumer = kafka_python.new_consumer(shared_broker.bootstrap)
    try:
        assigned = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        writer.start()
        consumed, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(consumed) < len(messages) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                consumed += [received(tp.partition, r.key, r.value, r.headers, r.timestamp) for r in records]
        writer.join(60)
    finally:
        consumer.close()
    assert_same_partitions(messages, consumed)


def test_broker_configs_list_static_overrides_and_defaults(shared_broker):
    admin = confluent.admin_client(shared_broker.bootstrap)
    resource = ConfigResource("broker", str(BROKER_ID))
    configs = admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    assert configs["num.partitions"].value == str(PARTITIONS)
    assert ConfigSource(configs["num.partitions"].source) == ConfigSource.STATIC_BROKER_CONFIG
    assert configs["log.segment.bytes"].value == DEFAULT_SEGMENT_BYTES
    assert ConfigSource(configs["log.segment.bytes"].source) == ConfigSource.DEFAULT_CONFIG
    assert configs["auto.create.topics.enable"].value == "true"


def test_validate_only_create_checks_the_request_without_creating_the_topic(shared_broker):
    admin, topic = confluent.admin_client(shared_broker.bootstrap), unique_topic("sem-validate")
    admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "1000"})],
                        validate_only=True)[topic].result(ADMIN_TIMEOUT_S)
    with pytest.raises(KafkaException) as error:
        admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "soon"})],
                            validate_only=True)[topic].result(ADMIN_TIMEOUT_S)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert topic not in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics


def test_deleted_then_recreated_topic_starts_empty(shared_broker):
    admin, topic = confluent.admin_client(shared_broker.bootstrap), unique_topic("sem-recreate")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    confluent.produce(shared_broker.bootstrap, topic, make_messages(100, "old", partitions=2))
    admin.delete_topics([topic])[topic].result(ADMIN_TIMEOUT_S)
    wait_until(lambda: topic not in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics, 10, f"{topic} gone")

    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    fresh = make_messages(10, "new", partitions=2)
    confluent.produce(shared_broker.bootstrap, topic, fresh)
    consumed = confluent.consume(shared_broker.bootstrap, topic, partitions=range(2))
    assert_same_partitions(fresh, consumed)
    assert {p: len(ms) for p, ms in by_partition(consumed).items()} == {0: 5, 1: 5}


def test_records_close_to_message_max_bytes_round_trip(shared_broker):
    topic = unique_topic("sem-near-max")
    messages = [Message(i % 2, f"near-max-{i}".encode(), os.urandom(900_000), (), now_ms() + i) for i in range(6)]
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"linger.ms": 0})
    assert_same_partitions(messages, confluent.consume(shared_broker.bootstrap, topic, partitions=range(2)))


def read_at_least(poll, count: int, consumed: list[Message]) -> None:
    deadline = time.monotonic() + READ_TIMEOUT_S
    while len(consumed) < count:
        assert time.monotonic() < deadline, f"{len(consumed)} of {count} messages read"
        consumed += poll()


@pytest.mark.timeout(120)
def test_confluent_consumer_kept_open_across_a_sigkill_restart_reads_on_without_gaps(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("sem-cf-reader-restart")
    first = make_messages(4000, "first")
    second = make_messages(2000, "second", base_timestamp=now_ms())
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kcore-compat-assign-only",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})

    def poll() -> list[Message]:
        records = consumer.consume(1000, 0.2)
        assert all(r.error() is None for r in records), [r.error() for r in records if r.error()]
        return [received(r.partition(), r.key(), r.value(), r.headers(), r.timestamp()[1]) for r in records]

    try:
        confluent.produce(broker.bootstrap, topic, first)
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        consumed: list[Message] = []
        read_at_least(poll, 1000, consumed)
        broker.restart(clean=False)
        confluent.produce(broker.bootstrap, topic, second)
        read_at_least(poll, len(first) + len(second), consumed)
        assert_same_partitions(first + second, consumed)
    finally:
        consumer.close()
        broker.kill()


@pytest.mark.timeout(120)
def test_kafka_python_consumer_kept_open_across_a_sigkill_restart_reads_on_without_gaps(tmp_path, caplog):
    caplog.set_level(logging.CRITICAL, logger="kafka")  # the restart logs connection errors
    broker, topic = start_broker(tmp_path / "data"), unique_topic("sem-kp-reader-restart")
    first = make_messages(4000, "first")
    second = make_messages(2000, "second", base_timestamp=now_ms())
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100, max_poll_records=1000, reconnect_backoff_max_ms=200)

    def poll() -> list[Message]:
        return [received(tp.partition, r.key, r.value, r.headers, r.timestamp)
                for tp, records in consumer.poll(timeout_ms=200).items() for r in records]

    try:
        kafka_python.produce(broker.bootstrap, topic, first)
        assigned = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        consumed: list[Message] = []
        read_at_least(poll, 1000, consumed)
        broker.restart(clean=False)
        kafka_python.produce(broker.bootstrap, topic, second)
        read_at_least(poll, len(first) + len(second), consumed)
        assert_same_partitions(first + second, consumed)
    finally:
        consumer.close()
        broker.kill()


@pytest.mark.timeout(150)
def test_idempotent_producer_writing_through_a_sigkill_restart_leaves_no_duplicates_or_gaps(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("sem-idempotent-kill")
    messages = idempotence_messages(30_000, "kill")
    errors, failed, pending_at_kill = [], [], 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 2,
                         "batch.size": 64 * 1024, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
                         "error_cb": errors.append})
    try:
        for index, m in enumerate(messages):
            if index == len(messages) // 2:
                pending_at_kill = len(producer)
                broker.restart(clean=False)
            while True:
                try:
                    producer.produce(topic, m.value, m.key, partition=m.partition, timestamp=m.timestamp,
                                     on_delivery=lambda error, _msg: error and failed.append(error))
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        assert producer.flush(90) == 0
        assert pending_at_kill > 0, "every message was acknowledged before the kill"
        assert not failed, failed[:3]
        assert not [e for e in errors if e.fatal()], errors
        assert_exactly_once(messages, confluent.consume(broker.bootstrap, topic))
    finally:
        broker.kill()


@pytest.mark.timeout(120)
def test_topic_with_tiny_segments_reads_back_across_segment_boundaries_and_after_sigkill(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("sem-tiny-segments")
    try:
        create_topic(broker.bootstrap, topic, 2, **{"segment.bytes": "65536"})
        messages = make_messages(20_000, "segments", partitions=2)
        confluent.produce(broker.bootstrap, topic, messages, **{"batch.size": 16_384})
        segments = list((broker.data_dir).glob(f"{topic}-0/*.log"))
        assert len(segments) > 5, f"only {len(segments)} segments"
        assert_same_partitions(messages, confluent.consume(broker.bootstrap, topic, partitions=range(2)))

        broker.restart(clean=False)
        assert_same_partitions(messages, confluent.consume(broker.bootstrap, topic, partitions=range(2)))
        consumer = confluent.new_consumer(broker.bootstrap)
        try:
            for index in (1, 4_321, 9_998):
                probe = messages[2 * index].timestamp
                [found] = consumer.offsets_for_times([TopicPartition(topic, 0, probe)], timeout=10)
                assert found.offset == index, f"timestamp of offset {index} found offset {found.offset}"
        finally:
            consumer.close()
    finally:
        broker.kill()


@pytest.mark.timeout(120)
def test_size_retention_moves_the_log_start_and_readers_below_it_restart_there(tmp_path):
    broker = start_broker(tmp_path / "data", {"log.retention.check.interval.ms": "300"})
    topic = unique_topic("sem-retention")
    try:
        create_topic(broker.bootstrap, topic, 1, **{"segment.bytes": "16384", "retention.bytes": "32768"})
        messages = [Message(0, None, f"retained-{i}".encode(), (), now_ms()) for i in range(10_000)]
        confluent.produce(broker.bootstrap, topic, messages, **{"batch.size": 4096})
        admin = confluent.admin_client(broker.bootstrap)
        wait_until(lambda: confluent.list_offsets(admin, topic, OffsetSpec.earliest()).offset > 0, 20,
                   "retention to delete the oldest segments")
        log_start = confluent.list_offsets(admin, topic, OffsetSpec.earliest()).offset
        assert confluent.list_offsets(admin, topic, OffsetSpec.latest()).offset == len(messages)
        assert log_start < len(messages) - 100, "retention.bytes keeps the newest segments"

        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kcore-compat-assign-only",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])  # below the log start: OFFSET_OUT_OF_RANGE, reset
            records, deadline = [], time.monotonic() + READ_TIMEOUT_S
            while len(records) < len(messages) - log_start and time.monotonic() < deadline:
                records += [r for r in consumer.consume(1000, 0.5) if r.error() is None]
        finally:
            consumer.close()
        assert [r.offset() for r in records] == list(range(log_start, len(messages)))
        assert [r.value() for r in records] == [m.value for m in messages[log_start:]]
    finally:
        broker.kill()


def test_keyless_record_on_a_compacted_topic_is_refused_with_invalid_record(shared_broker):
    topic = unique_topic("sem-compacted")
    create_topic(shared_broker.bootstrap, topic, **{"cleanup.policy": "compact"})
    with pytest.raises(AssertionError, match="INVALID_RECORD"):
        confluent.produce(shared_broker.bootstrap, topic, [Message(0, None, b"no key", (), now_ms())])
    keyed = [Message(0, b"k", b"keyed", (), now_ms())]
    confluent.produce(shared_broker.bootstrap, topic, keyed)
    assert_same_partitions(keyed, confluent.consume(shared_broker.bootstrap, topic, partitions=[0]))


def test_reader_past_the_log_end_is_reset_by_its_offset_reset_policy(shared_broker):
    topic, messages = unique_topic("sem-past-end"), make_messages(100, "past-end", partitions=1)
    confluent.produce(shared_broker.bootstrap, topic, messages)
    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": "kcore-compat-assign-only",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 5000)])  # OFFSET_OUT_OF_RANGE, then earliest
        records, deadline = [], time.monotonic() + READ_TIMEOUT_S
        while len(records) < len(messages) and time.monotonic() < deadline:
            records += [r for r in consumer.consume(100, 0.5) if r.error() is None]
    finally:
        consumer.close()
    assert [r.offset() for r in records] == list(range(len(messages)))

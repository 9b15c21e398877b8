"""Log compaction through a real broker and kafka-python: keyed updates to
a compacted topic are cleaned in the background (small segments, short
log.cleaner.backoff.ms); a consumer then reads the latest value per key at
its original offset, also after a SIGKILL and restart; records without a
key are refused with INVALID_RECORD."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import InvalidRecordError

from kcore.log.checkpoints import OffsetCheckpointFile
from kcore.log.cleaner import CLEANER_OFFSET_CHECKPOINT

TOPIC = "compacted"
KEYS = 50
UPDATES = 3000
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "4096",
                 "min.cleanable.dirty.ratio": "0.01"}
WAIT_S = 30.0


def create_topic(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs=TOPIC_CONFIGS)])
    finally:
        admin.close()


def produce_updates(bootstrap: str) -> dict[bytes, tuple[int, bytes | None]]:
    """UPDATES keyed values over KEYS keys, the last update of every fifth
    key a tombstone; returns key -> (offset, value) of the latest."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2,
                             batch_size=1024)  # batches well under segment.bytes
    try:
        futures = []
        for i in range(UPDATES):
            key = b"key-%02d" % (i % KEYS)
            tombstone = i >= UPDATES - KEYS and i % 5 == 0
            value = None if tombstone else b"value-%05d" % i
            futures.append((key, value, producer.send(TOPIC, key=key, value=value, partition=0)))
        producer.flush(60)
        return {key: (future.get(10).offset, value) for key, value, future in futures}
    finally:
        producer.close(timeout=10)


def consume_all(bootstrap: str) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    try:
        partition = TopicPartition(TOPIC, 0)
        end = consumer.end_offsets([partition])[partition]
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        records, deadline = [], time.monotonic() + WAIT_S
        while consumer.position(partition) < end:
            assert time.monotonic() < deadline, f"read stalled at {consumer.position(partition)}"
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def wait_for_cleaning(data_dir, at_least: int) -> int:
    checkpoint = OffsetCheckpointFile(data_dir / CLEANER_OFFSET_CHECKPOINT)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        offset = checkpoint.read().get((TOPIC, 0), 0) if checkpoint.path.exists() else 0
        if offset >= at_least:
            return offset
        time.sleep(0.1)
    pytest.fail(f"the cleaner did not reach offset {at_least} in {WAIT_S} s")


def check_latest(records: list, expected: dict) -> None:
    offsets = [record.offset for record in records]
    assert offsets == sorted(set(offsets))
    latest = {record.key: (record.offset, record.value) for record in records}
    assert latest == expected


def test_a_compacted_topic_serves_the_latest_value_per_key_after_background_cleaning(broker_factory):
    broker = broker_factory({"log.cleaner.backoff.ms": "100"})
    create_topic(broker.bootstrap)
    expected = produce_updates(broker.bootstrap)
    # Everything but the active segment (at most 4 KiB of records) gets cleaned.
    wait_for_cleaning(broker.data_dir, UPDATES - 200)
    records = consume_all(broker.bootstrap)
    check_latest(records, expected)
    assert len(records) < UPDATES / 5
    assert sum(1 for record in records if record.value is None) == KEYS // 5

    broker.restart(clean=False)
    check_latest(consume_all(broker.bootstrap), expected)


def test_a_record_without_a_key_is_refused_on_a_compacted_topic(broker_factory):
    broker = broker_factory()
    create_topic(broker.bootstrap)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", retries=0)
    try:
        with pytest.raises(InvalidRecordError):
            producer.send(TOPIC, value=b"no key", partition=0).get(10)
        assert producer.send(TOPIC, key=b"k", value=b"keyed", partition=0).get(10).offset == 0
    finally:
        producer.close(timeout=10)

"""DeleteRecords with the real admin clients against one node: confluent-kafka
(librdkafka), kafka-python and aiokafka move a partition's log start offset,
ListOffsets(earliest) and consumers starting from the beginning begin
there, a fetch below it is OFFSET_OUT_OF_RANGE, the segments below it
leave the disk, the start survives clean and unclean restarts, and bad
input gets Kafka's error codes with nothing else lost."""
from __future__ import annotations

import asyncio
import struct
import time
from pathlib import Path

import pytest
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import (
    InvalidTopicError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.compat import BROKER_ID, start_broker, unique_topic
from tests.support.wire import WireClient

TIMEOUT_S = 20.0
VALUE = b"v" * 300
# Five 300-byte records per 2,000-byte segment: deleting below offset 7
# leaves the first segment ([0, 5)) wholly below the new start.
SEGMENT_BYTES = "2000"


def create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"segment.bytes": SEGMENT_BYTES, **configs}
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(TIMEOUT_S)


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    """``count`` records to each partition, one batch each (linger 0, one at a time)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "max.in.flight": 1})
    for index in range(count):
        for partition in range(partitions):
            producer.produce(topic, VALUE, key=str(index).encode(), partition=partition)
        producer.flush(TIMEOUT_S)
    assert producer.flush(TIMEOUT_S) == 0


def earliest(bootstrap: str, topic: str, partition: int = 0) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    key = TopicPartition(topic, partition)
    return admin.list_offsets({key: OffsetSpec.earliest()})[key].result(TIMEOUT_S).offset


def confluent_delete(bootstrap: str, topic: str, offsets: dict[int, int]) -> dict[int, int]:
    """Partition -> low watermark, through librdkafka's DeleteRecords."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in offsets.items()],
                                   request_timeout=TIMEOUT_S)
    return {key.partition: future.result(TIMEOUT_S).low_watermark for key, future in futures.items()}


def consume_from_beginning(bootstrap: str, topic: str, partition: int, expected: int) -> list[int]:
    """Offsets read by a consumer starting at the beginning of ``partition``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, partition, -2)])  # OFFSET_BEGINNING
    offsets: list[int] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(offsets) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                offsets.append(message.offset())
    finally:
        consumer.close()
    return offsets


def segment_bases(data_dir: Path, topic: str, partition: int = 0) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (data_dir / f"{topic}-{partition}").glob("*.log"))


@pytest.mark.processes
def test_librdkafka_moves_the_start_and_consumers_begin_there(shared_broker):
    bootstrap, topic = shared_broker.bootstrap, unique_topic("dr-rdkafka")
    create(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, 12, partitions=2)
    assert confluent_delete(bootstrap, topic, {0: 7, 1: -1}) == {0: 7, 1: 12}  # -1: the high watermark
    assert (earliest(bootstrap, topic, 0), earliest(bootstrap, topic, 1)) == (7, 12)
    assert consume_from_beginning(bootstrap, topic, 0, 5) == [7, 8, 9, 10, 11]
    # Deleting below the start again changes nothing and succeeds.
    assert confluent_delete(bootstrap, topic, {0: 3}) == {0: 7}
    produce(bootstrap, topic, 1, partitions=2)
    assert consume_from_beginning(bootstrap, topic, 1, 1) == [12]


def test_kafka_python_deletes_to_the_high_watermark_and_a_fetch_below_is_out_of_range(shared_broker):
    bootstrap, topic = shared_broker.bootstrap, unique_topic("dr-kafka-python")
    create(bootstrap, topic)
    produce(bootstrap, topic, 10)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        results = admin.delete_records({KpTopicPartition(topic, 0): 6}, timeout_ms=int(TIMEOUT_S * 1000))
        assert results[KpTopicPartition(topic, 0)]["low_watermark"] == 6
    finally:
        admin.close()
    key = KpTopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="none",
                             enable_auto_commit=False, consumer_timeout_ms=int(TIMEOUT_S * 1000))
    try:
        consumer.assign([key])
        assert consumer.beginning_offsets([key]) == {key: 6}
        consumer.seek(key, 2)
        with pytest.raises(OffsetOutOfRangeError):
            consumer.poll(timeout_ms=int(TIMEOUT_S * 1000))
        consumer.seek(key, 6)
        assert [r.offset for r in consumer.poll(timeout_ms=int(TIMEOUT_S * 1000))[key]] == [6, 7, 8, 9]
    finally:
        consumer.close()


def test_aiokafka_deletes_records(shared_broker):
    bootstrap, topic = shared_broker.bootstrap, unique_topic("dr-aiokafka")
    create(bootstrap, topic)
    produce(bootstrap, topic, 5)

    async def delete() -> dict:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await admin.delete_records({AioTopicPartition(topic, 0): RecordsToDelete(4)},
                                              timeout_ms=int(TIMEOUT_S * 1000))
        finally:
            await admin.close()

    assert asyncio.run(delete()) == {AioTopicPartition(topic, 0): 4}
    assert earliest(bootstrap, topic) == 4


def test_bad_offsets_unknown_partitions_policies_and_internal_topics_get_kafkas_errors(shared_broker):
    bootstrap, topic, compacted = shared_broker.bootstrap, unique_topic("dr-bad"), unique_topic("dr-compact")
    create(bootstrap, topic)
    create(bootstrap, compacted, **{"cleanup.policy": "compact"})
    produce(bootstrap, topic, 5)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def delete(name: str, partition: int, offset: int) -> None:
        # partition_leader_id sends the request as it is: the broker answers, not the client.
        admin.delete_records({KpTopicPartition(name, partition): offset}, timeout_ms=5000,
                             partition_leader_id=BROKER_ID)

    try:
        for name, partition, offset, error in [
                (topic, 0, 6, OffsetOutOfRangeError),       # past the high watermark (5)
                (topic, 0, -5, OffsetOutOfRangeError),      # negative, not -1
                (topic, 3, 1, UnknownTopicOrPartitionError),
                (unique_topic("dr-missing"), 0, 1, UnknownTopicOrPartitionError),
                (compacted, 0, 0, PolicyViolationError),    # cleanup.policy without delete
                ("__consumer_offsets", 0, 0, InvalidTopicError)]:
            with pytest.raises(error):
                delete(name, partition, offset)
    finally:
        admin.close()
    assert earliest(bootstrap, topic) == 0
    assert consume_from_beginning(bootstrap, topic, 0, 5) == [0, 1, 2, 3, 4]
    with pytest.raises(KafkaException) as raised:
        confluent_delete(bootstrap, topic, {0: 9})
    assert raised.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE


def test_each_version_answers_and_malformed_requests_close_only_their_connection(shared_broker):
    bootstrap, topic = shared_broker.bootstrap, unique_topic("dr-wire")
    create(bootstrap, topic)
    produce(bootstrap, topic, 4)
    good = WireClient(shared_broker.port)
    advertised = {k.api_key: (k.min_version, k.max_version)
                  for k in good.request(ApiKey.API_VERSIONS, 0, {}).api_keys}
    assert advertised[ApiKey.DELETE_RECORDS] == (0, 2)
    header = struct.pack(">hhih", ApiKey.DELETE_RECORDS, 2, 1, 1) + b"x" + b"\x00"
    for body in (b"\x02\x10topic",                        # cut inside the topic name
                 b"\x02" + b"\x7f" * 6,                   # a name length past the frame
                 b"\x02\x02t\xff\xff\xff\xff\x0f"):       # a partition array of ~2^32 entries
        bad = WireClient(shared_broker.port)
        frame = header + body
        bad.send_raw(struct.pack(">i", len(frame)) + frame)
        assert bad.is_closed_by_peer()
        bad.close()
    for version in (0, 1, 2):  # v0 and v1 are the same; v2 is flexible
        response = good.request(ApiKey.DELETE_RECORDS, version, {"topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "offset": version + 1}]}],
            "timeout_ms": 5000})
        result = response.topics[0].partitions[0]
        assert (result.error_code, result.low_watermark) == (ErrorCode.NONE, version + 1)
    good.close()
    assert consume_from_beginning(bootstrap, topic, 0, 1) == [3]


@pytest.mark.parametrize("clean", [True, False], ids=["sigterm", "sigkill"])
def test_the_start_survives_a_restart_and_the_segments_below_it_are_gone(tmp_path, clean):
    data_dir = tmp_path / "data"
    broker = start_broker(data_dir)
    try:
        topic = unique_topic("dr-restart")
        create(broker.bootstrap, topic, **{"file.delete.delay.ms": "0"})
        produce(broker.bootstrap, topic, 12)
        assert segment_bases(data_dir, topic) == [0, 5, 10]
        assert confluent_delete(broker.bootstrap, topic, {0: 7}) == {0: 7}
        assert segment_bases(data_dir, topic) == [5, 10]
        broker.restart(clean=clean)
        assert earliest(broker.bootstrap, topic) == 7
        assert consume_from_beginning(broker.bootstrap, topic, 0, 5) == [7, 8, 9, 10, 11]
        assert segment_bases(data_dir, topic) == [5, 10]
    finally:
        broker.kill()

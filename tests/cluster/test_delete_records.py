"""DeleteRecords on a 3-broker cluster with a real ZooKeeper: the leader
answers once every live replica moved its log start offset (followers
learn it from their fetch answers), each replica drops the segments below
it and checkpoints it, consumers begin there and a fetch below it is
OFFSET_OUT_OF_RANGE, a follower asked answers NOT_LEADER_OR_FOLLOWER, a
follower that becomes leader keeps it, a paused
follower makes the answer time out (the start still moves) and a dead
one holds nothing back, and a restarted replica keeps it."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import NotLeaderForPartitionError, OffsetOutOfRangeError, RequestTimedOutError

from kcore.log.checkpoints import OffsetCheckpointFile
from tests.support.cli import kcore_cli
from tests.support.cluster import WAIT_S, Cluster

TOPIC = "trimmed"
VALUE = b"v" * 300
# Five 300-byte records per 2,000-byte segment: a start at 12 leaves the
# segments [0, 5) and [5, 10) wholly below it.
CONFIGS = {"segment.bytes": "2000", "file.delete.delay.ms": "0", "min.insync.replicas": "2"}


def produce(cluster: Cluster, count: int, topic: str = TOPIC, partitions: int = 1) -> None:
    """``count`` records to each partition, one batch each."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                         "max.in.flight": 1})
    for index in range(count):
        for partition in range(partitions):
            producer.produce(topic, VALUE, key=str(index).encode(), partition=partition)
        producer.flush(WAIT_S)
    assert producer.flush(WAIT_S) == 0


def delete_records(cluster: Cluster, offset: int) -> int:
    """The low watermark librdkafka's DeleteRecords answers."""
    key = TopicPartition(TOPIC, 0, offset)
    futures = cluster.admin.delete_records([key], request_timeout=WAIT_S, operation_timeout=WAIT_S)
    return futures[key].result(WAIT_S).low_watermark


def earliest(cluster: Cluster) -> int:
    key = TopicPartition(TOPIC, 0)
    return cluster.admin.list_offsets({key: OffsetSpec.earliest()})[key].result(WAIT_S).offset


def replica_state(cluster: Cluster, broker_id: int) -> tuple[int | None, list[int]]:
    """A broker's checkpointed log start offset of the partition and its segments' base offsets."""
    data_dir = cluster.brokers[broker_id].data_dir
    checkpoint = OffsetCheckpointFile(data_dir / "log-start-offset-checkpoint").read()
    segments = sorted(int(p.name.split(".")[0]) for p in (data_dir / f"{TOPIC}-0").glob("*.log"))
    return checkpoint.get((TOPIC, 0)), segments


def first_offset_from_beginning(cluster: Cluster) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"dr-{time.monotonic()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, 0, -2)])  # OFFSET_BEGINNING
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message.offset()
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


def assert_fetch_below_is_out_of_range(cluster: Cluster, offset: int) -> None:
    key = KafkaPythonTopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="none",
                             enable_auto_commit=False)
    try:
        consumer.assign([key])
        consumer.seek(key, offset)
        with pytest.raises(OffsetOutOfRangeError):
            consumer.poll(timeout_ms=int(WAIT_S * 1000))
    finally:
        consumer.close()


def test_every_replica_moves_its_start_and_a_new_leader_keeps_it(cluster):
    cluster.create_topic(TOPIC, 1, 3, CONFIGS)
    produce(cluster, 20)
    assert delete_records(cluster, 12) == 12  # answered once all three replicas are at 12
    cluster.wait_for(lambda: all(replica_state(cluster, b) == (12, [10, 15]) for b in cluster.brokers),
                     "every replica checkpointed 12 and dropped the segments below it")
    assert earliest(cluster) == 12 and first_offset_from_beginning(cluster) == 12
    assert_fetch_below_is_out_of_range(cluster, 4)

    old_leader = cluster.wait_leader(TOPIC, 0)
    cluster.brokers[old_leader].kill()
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) not in (-1, old_leader), "a follower leads")
    assert earliest(cluster) == 12 and first_offset_from_beginning(cluster) == 12
    assert_fetch_below_is_out_of_range(cluster, 11)
    produce(cluster, 1)
    cluster.brokers[old_leader].start()
    cluster.wait_for(lambda: cluster.fully_replicated(TOPIC, 1, 3), "the old leader rejoined")
    assert replica_state(cluster, old_leader)[0] == 12
    # Deleting up to the high watermark (-1) now reaches the rejoined replica too.
    assert delete_records(cluster, -1) == 21
    cluster.wait_for(lambda: all(replica_state(cluster, b)[0] == 21 for b in cluster.brokers),
                     "every replica checkpointed 21")


def test_a_paused_follower_times_the_answer_out_and_a_dead_one_holds_nothing_back(cluster):
    cluster.create_topic(TOPIC, 1, 3, CONFIGS)
    produce(cluster, 20)
    leader = cluster.wait_leader(TOPIC, 0)
    paused, other = (b for b in cluster.brokers if b != leader)
    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[leader].bootstrap)
    key = KafkaPythonTopicPartition(TOPIC, 0)
    follower_admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[other].bootstrap)
    try:
        with pytest.raises(NotLeaderForPartitionError):  # sent as it is to a follower
            follower_admin.delete_records({key: 3}, timeout_ms=5000, partition_leader_id=other)
    finally:
        follower_admin.close()
    assert earliest(cluster) == 0
    try:
        cluster.brokers[paused].pause()
        # Well inside its 3 s ZooKeeper session: still a live replica that never reports 7.
        with pytest.raises(RequestTimedOutError):
            admin.delete_records({key: 7}, timeout_ms=1000, partition_leader_id=leader)
        assert earliest(cluster) == 7  # the leader moved its start all the same
        cluster.brokers[paused].kill()
        cluster.brokers[paused].resume()  # dead: nothing to resume, but no longer marked paused
        cluster.wait_for(lambda: len(cluster.metadata().brokers) == 2, "the paused broker left")
        started = time.monotonic()
        results = admin.delete_records({key: 11}, timeout_ms=int(WAIT_S * 1000), partition_leader_id=leader)
        assert results[key]["low_watermark"] == 11 and time.monotonic() - started < WAIT_S / 2
    finally:
        admin.close()
    cluster.wait_for(lambda: replica_state(cluster, other) == (11, [10, 15]), "the other follower at 11")
    cluster.brokers[paused].start()
    cluster.wait_for(lambda: replica_state(cluster, paused) == (11, [10, 15]),
                     "the restarted follower learned the start and dropped the segments below it")


def test_the_cli_sends_each_partition_to_its_leader_and_reports_each_error(cluster, tmp_path):
    cluster.create_topic("spread", 4, 2, CONFIGS)
    assert len({cluster.wait_leader("spread", p) for p in range(3)}) == 3
    produce(cluster, 5, "spread", partitions=4)
    path = tmp_path / "offsets.json"
    wanted = [("spread", 0, 2), ("spread", 1, -1), ("spread", 2, 6), ("spread", 3, -5), ("missing", 0, 1)]
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "offset": o} for t, p, o in wanted]}))
    result = kcore_cli("delete-records", "--offset-json-file", str(path),
                       "--bootstrap-server", cluster.brokers[1].bootstrap)
    assert result.stdout.splitlines()[2:] == [
        "partition: spread-0\tlow_watermark: 2", "partition: spread-1\tlow_watermark: 5",
        "partition: spread-2\terror: OFFSET_OUT_OF_RANGE",  # past the high watermark
        "partition: spread-3\terror: OFFSET_OUT_OF_RANGE",  # negative, not -1
        "partition: missing-0\terror: UNKNOWN_TOPIC_OR_PARTITION"], result.stderr
    assert result.returncode == 1
    earliest_of = cluster.admin.list_offsets({TopicPartition("spread", p): OffsetSpec.earliest()
                                              for p in range(4)})
    assert [earliest_of[TopicPartition("spread", p)].result(WAIT_S).offset for p in range(4)] == [2, 5, 0, 0]

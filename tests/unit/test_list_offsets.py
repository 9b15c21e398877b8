"""ListOffsets v1-11 on the broker, through the real codecs, against
Kafka's answers for a log without tiered storage (ReplicaManager.fetchOffset,
UnifiedLog.fetchOffsetByTimestamp): the special timestamps and the version
each needs, the leader epoch of what was found, duplicates, KIP-207's
OFFSET_NOT_AVAILABLE, and who may answer."""
from __future__ import annotations

import asyncio

import pytest

from kcore.metadata import PartitionState
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.batches import make_batch
from tests.support.in_process import InProcessBroker


def lookup(broker: InProcessBroker, timestamps, version: int = 11, replica_id: int = -1,
           isolation_level: int = 0) -> list:
    """(error, timestamp, offset, leader_epoch) for each timestamp, one
    request each (a partition named twice in one request is refused)."""
    found = []
    for timestamp in timestamps:
        body = {"replica_id": replica_id, "isolation_level": isolation_level, "timeout_ms": 1000,
                "topics": [{"name": "t", "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]}
        response = asyncio.run(broker.request(ApiKey.LIST_OFFSETS, body, version))
        (p,) = response.topics[0].partitions
        found.append((p.error_code, p.timestamp, p.offset, p.leader_epoch))
    return found


def lead(broker: InProcessBroker, epoch: int, leader: int = 1, replicas=(1,)) -> None:
    states = [PartitionState("t", 0, leader, epoch, replicas, replicas, epoch, 1)]
    broker.replica_manager.on_update_metadata(1, 1, [broker.info], states)
    broker.replica_manager.on_leader_and_isr(1, 1, states, [broker.info])


def produce(broker: InProcessBroker, timestamps) -> None:
    partition = broker.replica_manager.get("t", 0)
    for timestamp in timestamps:
        partition.append_records_to_leader(memoryview(make_batch(1, timestamp=timestamp)), 1)


@pytest.fixture
def broker(tmp_path):
    """Offsets 0-2 in epoch 1 (timestamps 100, 300, 200), 3-4 in epoch 4
    (timestamps 250, 260)."""
    instance = InProcessBroker(tmp_path, 1)
    lead(instance, 1)
    produce(instance, [100, 300, 200])
    lead(instance, 4)
    produce(instance, [250, 260])
    yield instance
    instance.close()


def test_special_timestamps_answer_as_kafka_without_tiered_storage(broker):
    assert lookup(broker, [-1, -2, -3, -4, -5, -6]) == [
        (E.NONE, -1, 5, 4),    # latest: the high watermark, the leader's epoch
        (E.NONE, -1, 0, 1),    # earliest: the log start, the first cached epoch
        (E.NONE, 300, 1, 1),   # max timestamp: the record, its batch's epoch
        (E.NONE, -1, 0, 1),    # earliest local: all of the log is local
        (E.NONE, -1, -1, -1),  # latest tiered: nothing is tiered
        (E.NONE, -1, -1, -1),  # earliest pending upload: nothing to upload
    ]


def test_a_timestamp_finds_the_first_record_at_or_after_it_with_its_epoch(broker):
    assert lookup(broker, [0, 150, 255, 301]) == [
        (E.NONE, 100, 0, 1), (E.NONE, 300, 1, 1), (E.NONE, 300, 1, 1), (E.NONE, -1, -1, -1)]
    produce(broker, [400])  # offset 5, epoch 4
    assert lookup(broker, [301]) == [(E.NONE, 400, 5, 4)]


@pytest.mark.parametrize("timestamp, first_version", [(-3, 7), (-4, 8), (-5, 9), (-6, 11)])
def test_a_special_timestamp_before_its_version_is_unsupported(broker, timestamp, first_version):
    for version in (first_version - 1, 6, 1):
        assert lookup(broker, [timestamp], version)[0][0] == E.UNSUPPORTED_VERSION, version
    assert lookup(broker, [timestamp], first_version)[0][0] == E.NONE


def test_an_unknown_negative_timestamp_is_unsupported_at_every_version(broker):
    assert [row[0] for row in lookup(broker, [-7, -100])] == [E.UNSUPPORTED_VERSION] * 2


def test_a_partition_named_twice_is_an_invalid_request_each_time(broker):
    for topics in ([{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1},
                                                 {"partition_index": 0, "timestamp": -2}]}],
                   [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]},
                    {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}]):
        body = {"replica_id": -1, "isolation_level": 0, "topics": topics}
        response = asyncio.run(broker.request(ApiKey.LIST_OFFSETS, body, 7))
        assert [p.error_code for t in response.topics for p in t.partitions] == \
            [E.INVALID_REQUEST] * 2


def test_a_new_leader_behind_its_epoch_start_answers_offset_not_available(tmp_path):
    broker = InProcessBroker(tmp_path, 1)
    try:
        lead(broker, 1, replicas=(1, 2))
        partition = broker.replica_manager.get("t", 0)
        produce(broker, [100, 200])
        lead(broker, 2, replicas=(1, 2))  # elected with its log end at 2, its HW still 0
        assert partition.high_watermark_behind_epoch_start
        assert lookup(broker, [-1, 150, -2, -3]) == [
            (E.OFFSET_NOT_AVAILABLE, -1, -1, -1), (E.OFFSET_NOT_AVAILABLE, -1, -1, -1),
            (E.NONE, -1, 0, 1), (E.OFFSET_NOT_AVAILABLE, -1, -1, -1)]
        assert lookup(broker, [-1], version=4)[0][0] == E.LEADER_NOT_AVAILABLE
        # A broker (or the debugging id) reads up to the log end, never lagging.
        assert lookup(broker, [-1, 150], replica_id=-2) == [
            (E.NONE, -1, 2, 2), (E.NONE, 200, 1, 1)]
    finally:
        broker.close()


def test_only_the_leader_answers_a_consumer_and_any_replica_the_debugging_id(tmp_path):
    broker = InProcessBroker(tmp_path, 2)
    try:
        lead(broker, 3, leader=1, replicas=(1, 2))
        assert lookup(broker, [-1])[0][0] == E.NOT_LEADER_OR_FOLLOWER
        assert lookup(broker, [-1], replica_id=-2)[0] == (E.NONE, -1, 0, 3)
    finally:
        broker.close()

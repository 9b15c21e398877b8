"""Fetch v11/v12 on the broker, through the real codecs: the diverging
epoch of v12 (Kafka's Partition.readRecords), followers serving v11+
consumers up to their high watermark, and the leader's preferred read
replica with a rack-aware selector (KIP-392, Kafka's
findPreferredReadReplica)."""
from __future__ import annotations

import asyncio

import pytest

from kcore.config import BrokerConfig, ConfigError
from kcore.metadata import BrokerInfo, PartitionState
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.fetcher import FetcherConfig, LeaderFetcher
from kcore.replication.replica_selector import RackAwareReplicaSelector, ReplicaView, replica_selector
from tests.support.batches import make_batch
from tests.support.in_process import InProcessBroker

RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}


def body(offset: int, *, replica_id: int = -1, last_fetched_epoch: int = -1,
         current_leader_epoch: int = -1, rack_id: str = "", max_wait_ms: int = 0,
         log_start_offset: int = -1) -> dict:
    return {"replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": 1 << 24, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [{
                "partition": 0, "current_leader_epoch": current_leader_epoch,
                "fetch_offset": offset, "last_fetched_epoch": last_fetched_epoch,
                "log_start_offset": log_start_offset, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": rack_id}


def fetch(broker: InProcessBroker, request: dict, version: int = 12):
    response = asyncio.run(broker.request(ApiKey.FETCH, request, version))
    return response.responses[0].partitions[0]


def states(leader: int, epoch: int, replicas=(1, 2, 3)) -> list[PartitionState]:
    return [PartitionState("t", 0, leader, epoch, replicas, replicas, epoch, 1)]


def infos() -> list[BrokerInfo]:
    return [BrokerInfo(i, "127.0.0.1", 9000 + i, RACKS[i]) for i in (1, 2, 3)]


def start(broker: InProcessBroker, leader: int, epoch: int, replicas=(1, 2, 3)) -> None:
    broker.replica_manager.on_update_metadata(1, 1, infos(), states(leader, epoch, replicas))
    broker.replica_manager.on_leader_and_isr(1, 1, states(leader, epoch, replicas), infos())


def produce(broker: InProcessBroker, batches: int) -> None:
    partition = broker.replica_manager.get("t", 0)
    for _ in range(batches):
        partition.append_records_to_leader(memoryview(make_batch(1, value_bytes=20)), 1)


@pytest.fixture
def leader(tmp_path):
    """Broker 1 leads t-0 with replicas 1, 2, 3: offsets 0-4 in epoch 1,
    5-9 in epoch 3, all of them on both followers (high watermark 10)."""
    broker = InProcessBroker(tmp_path / "leader", 1)
    start(broker, 1, 1)
    produce(broker, 5)
    start(broker, 1, 3)
    produce(broker, 5)
    for follower in (2, 3):
        fetch(broker, body(10, replica_id=follower, last_fetched_epoch=3))
    assert broker.replica_manager.get("t", 0).high_watermark == 10
    yield broker
    broker.close()


# -- v12: the diverging epoch ------------------------------------------------------------
@pytest.mark.parametrize("last_fetched_epoch, offset, diverging", [
    (3, 8, None),     # our epoch, inside it: no divergence
    (3, 10, None),    # at the log end
    (1, 5, None),     # epoch 1 ends at 5: a fetcher at 5 agrees
    (1, 7, (1, 5)),   # epoch 1 ended at 5 here: the fetcher's 5-6 diverge
    (2, 7, (1, 5)),   # never had epoch 2: the largest below it, and its end
    (0, 3, (0, 0)),   # below the first epoch: that epoch "ends" where epoch 1 starts
])
def test_a_last_fetched_epoch_that_ends_before_the_fetch_offset_answers_a_diverging_epoch(
        leader, last_fetched_epoch, offset, diverging):
    data = fetch(leader, body(offset, last_fetched_epoch=last_fetched_epoch))
    assert data.error_code == E.NONE
    if diverging is None:
        assert data.diverging_epoch.epoch == -1 and (data.records or offset == 10)
    else:
        assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == diverging
        assert not data.records and data.high_watermark == 10


def test_an_epoch_the_leader_cannot_place_or_an_offset_below_the_log_start_is_out_of_range(leader):
    assert fetch(leader, body(8, last_fetched_epoch=7)).error_code == E.OFFSET_OUT_OF_RANGE
    leader.replica_manager.get("t", 0).delete_records(4)
    assert fetch(leader, body(2, last_fetched_epoch=1)).error_code == E.OFFSET_OUT_OF_RANGE
    assert fetch(leader, body(2, last_fetched_epoch=-1)).error_code == E.OFFSET_OUT_OF_RANGE


def test_before_v12_the_last_fetched_epoch_is_not_sent_and_nothing_diverges(leader):
    data = fetch(leader, body(7, last_fetched_epoch=1), version=11)
    assert data.error_code == E.NONE and data.records and data.diverging_epoch.epoch == -1


def test_a_diverging_follower_fetch_is_not_counted_as_its_progress(leader):
    partition = leader.replica_manager.get("t", 0)
    data = fetch(leader, body(12, replica_id=3, last_fetched_epoch=1))
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (1, 5)
    assert partition.follower_state(3).log_end_offset == 10  # its last fetch that counted
    assert fetch(leader, body(8, replica_id=3, last_fetched_epoch=3)).records
    assert partition.follower_state(3).log_end_offset == 8


def test_a_diverging_answer_does_not_wait_for_min_bytes(leader):
    request = body(10, last_fetched_epoch=3, max_wait_ms=5000)
    request["topics"].append({"topic": "t", "partitions": []})
    request["topics"][0]["partitions"].append({
        "partition": 0, "current_leader_epoch": -1, "fetch_offset": 7, "last_fetched_epoch": 1,
        "log_start_offset": -1, "partition_max_bytes": 1 << 20})
    loop_started = asyncio.run(_timed(leader, request))
    assert loop_started < 2.0


async def _timed(broker: InProcessBroker, request: dict) -> float:
    loop = asyncio.get_running_loop()
    began = loop.time()
    await broker.request(ApiKey.FETCH, request, 12)
    return loop.time() - began


# -- followers serve v11+ consumers --------------------------------------------------------
@pytest.fixture
def pair(tmp_path):
    """Broker 1 leads t-0 (epoch 1, replicas 1, 2), broker 2 follows and has
    copied 4 batches; the leader holds a fifth the follower has not fetched."""
    leader_broker = InProcessBroker(tmp_path / "l", 1)
    follower = InProcessBroker(tmp_path / "f", 2)
    for broker in (leader_broker, follower):
        broker.replica_manager.on_update_metadata(1, 1, infos(), states(1, 1, (1, 2)))
        broker.replica_manager.on_leader_and_isr(1, 1, states(1, 1, (1, 2)), infos())
    produce(leader_broker, 4)
    asyncio.run(_copy(leader_broker, follower, 4))
    produce(leader_broker, 1)
    yield leader_broker, follower
    leader_broker.close()
    follower.close()


async def _copy(leader_broker: InProcessBroker, follower: InProcessBroker, count: int) -> None:
    """Run the real follower fetcher until the follower holds ``count``
    offsets and has learnt a high watermark of ``count``."""
    fetcher = LeaderFetcher(leader_broker.info, FetcherConfig(2, max_wait_ms=20), lambda: None)

    async def connect():
        return leader_broker
    fetcher._connect = connect  # type: ignore[method-assign]
    fetcher.add([follower.replica_manager.get("t", 0)])
    copy = follower.replica_manager.get("t", 0)
    try:
        for _ in range(300):
            if copy.log_end_offset >= count and copy.high_watermark >= count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the follower did not catch up")
    finally:
        fetcher.stop()
        await fetcher.wait_stopped()


def test_a_follower_serves_a_v11_consumer_up_to_its_high_watermark(pair):
    _leader, follower = pair
    partition = follower.replica_manager.get("t", 0)
    assert not partition.is_leader and partition.high_watermark == 4
    data = fetch(follower, body(0), version=11)
    assert data.error_code == E.NONE and data.high_watermark == 4
    assert data.records and data.preferred_read_replica == -1
    # At its high watermark a follower has nothing yet; past its log end,
    # the consumer is out of range (it goes back to the leader).
    assert not fetch(follower, body(4), version=11).records
    assert fetch(follower, body(6), version=12).error_code == E.OFFSET_OUT_OF_RANGE


def test_a_follower_refuses_older_consumers_and_checks_the_leader_epoch(pair):
    _leader, follower = pair
    assert fetch(follower, body(0), version=10).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert fetch(follower, body(0, current_leader_epoch=0)).error_code == E.FENCED_LEADER_EPOCH
    assert fetch(follower, body(0, current_leader_epoch=2)).error_code == E.UNKNOWN_LEADER_EPOCH
    assert fetch(follower, body(0, current_leader_epoch=1)).error_code == E.NONE
    # A broker's fetch goes to the leader only.
    assert fetch(follower, body(0, replica_id=3)).error_code == E.NOT_LEADER_OR_FOLLOWER


# -- the leader's preferred read replica -------------------------------------------------
def test_the_rack_aware_leader_sends_a_consumer_to_an_in_sync_replica_in_its_rack(leader):
    leader.replica_manager.replica_selector = replica_selector(
        "org.apache.kafka.common.replica.RackAwareReplicaSelector")
    data = fetch(leader, body(0, rack_id="rack-b"), version=11)
    assert (data.error_code, data.preferred_read_replica) == (E.NONE, 2)
    assert not data.records and data.high_watermark == 10 and data.log_start_offset == 0
    # Its own rack, no rack, an unknown rack, or before v11: the leader serves.
    for request, version in [(body(0, rack_id="rack-a"), 11), (body(0), 11),
                             (body(0, rack_id="rack-z"), 12), (body(0, rack_id="rack-b"), 10)]:
        data = fetch(leader, request, version)
        assert data.preferred_read_replica == -1 and data.records, (request["rack_id"], version)
    # A stale epoch is refused before any preference is given.
    fenced = fetch(leader, body(0, rack_id="rack-b", current_leader_epoch=1), version=11)
    assert (fenced.error_code, fenced.preferred_read_replica) == (E.FENCED_LEADER_EPOCH, -1)


def test_a_follower_behind_the_fetch_offset_or_out_of_the_isr_is_not_preferred(leader):
    manager = leader.replica_manager
    manager.replica_selector = replica_selector(
        "kcore.replication.replica_selector.RackAwareReplicaSelector")
    fetch(leader, body(6, replica_id=2, last_fetched_epoch=3))
    assert fetch(leader, body(8, rack_id="rack-b"), 11).preferred_read_replica == -1
    assert fetch(leader, body(5, rack_id="rack-b"), 11).preferred_read_replica == 2
    partition = manager.get("t", 0)
    partition.isr = [1, 3]
    assert fetch(leader, body(5, rack_id="rack-b"), 11).preferred_read_replica == -1
    partition.isr = [1, 2, 3]
    # A broker that left the cluster is not offered either.
    manager.metadata_cache.update(1, [info for info in infos() if info.broker_id != 2],
                                  states(1, 3))
    assert fetch(leader, body(5, rack_id="rack-b"), 11).preferred_read_replica == -1


def test_without_a_selector_or_with_the_leader_selector_the_leader_always_serves(leader):
    assert fetch(leader, body(0, rack_id="rack-b"), 11).preferred_read_replica == -1
    leader.replica_manager.replica_selector = replica_selector(
        "org.apache.kafka.common.replica.LeaderSelector")
    assert fetch(leader, body(0, rack_id="rack-b"), 11).preferred_read_replica == -1


def test_replica_selector_class_takes_kafka_and_kcore_names_only():
    for name in ("org.apache.kafka.common.replica.RackAwareReplicaSelector",
                 "kcore.replication.replica_selector.RackAwareReplicaSelector",
                 "org.apache.kafka.common.replica.LeaderSelector"):
        assert BrokerConfig({"replica.selector.class": name})["replica.selector.class"] == name
    with pytest.raises(ConfigError, match="replica.selector.class"):
        BrokerConfig({"replica.selector.class": "com.example.Closest"})
    assert BrokerConfig()["replica.selector.class"] is None


def test_among_replicas_in_the_rack_the_most_caught_up_is_chosen():
    selector = RackAwareReplicaSelector()
    leader = ReplicaView(1, "a", 100, 0)
    behind, ahead = ReplicaView(2, "b", 90, 0), ReplicaView(3, "b", 100, 50)
    assert selector.select("b", leader, [leader, behind, ahead]) is ahead
    fresher = ReplicaView(4, "b", 100, 10)
    assert selector.select("b", leader, [leader, ahead, fresher]) is fresher
    twin = ReplicaView(5, "b", 100, 10)
    assert selector.select("b", leader, [leader, fresher, twin]) is twin  # then the larger id
    assert selector.select("a", leader, [leader, ReplicaView(6, "a", 120, 0)]) is leader
    assert selector.select("", leader, [leader, ahead]) is leader


# -- the follower fetcher truncates on a diverging epoch -----------------------------------
def batches(broker: InProcessBroker) -> list[tuple[int, int]]:
    log = broker.replica_manager.get("t", 0).log
    return [(header.base_offset, header.partition_leader_epoch)
            for header, _ in log.batch_headers(log.log_start_offset)]


@pytest.fixture
def diverged(tmp_path):
    """Broker 2 led epoch 1 and wrote offsets 0-6 there; broker 1 took over
    at epoch 3 from offset 5 (its epoch 1 ended at 5) and wrote 5-9. Broker
    2 now follows broker 1."""
    leader_broker = InProcessBroker(tmp_path / "l", 1)
    follower = InProcessBroker(tmp_path / "f", 2)
    start(leader_broker, 1, 1, (1, 2))
    start(follower, 2, 1, (1, 2))
    produce(leader_broker, 5)
    produce(follower, 7)
    start(leader_broker, 1, 3, (1, 2))
    produce(leader_broker, 5)
    start(follower, 1, 3, (1, 2))
    assert batches(follower)[-1] == (6, 1)
    yield leader_broker, follower
    leader_broker.close()
    follower.close()


def test_a_follower_with_a_divergent_tail_truncates_on_the_diverging_epoch_and_copies(diverged):
    """Broker 2 must drop 5-6 and copy 5-9 of epoch 3, with no
    OffsetForLeaderEpoch request: the fetch itself detects the divergence."""
    leader_broker, follower = diverged
    asyncio.run(_copy(leader_broker, follower, 10))
    assert batches(follower) == batches(leader_broker)
    assert batches(follower)[4:7] == [(4, 1), (5, 3), (6, 3)]
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH not in {request.api_key for request in leader_broker.requests}
    diverging = [r for r in leader_broker.requests if r.api_key == ApiKey.FETCH
                 and r.body.topics and r.body.topics[0].partitions
                 and r.body.topics[0].partitions[0].last_fetched_epoch == 1]
    assert diverging and diverging[0].api_version == 12
    assert diverging[0].body.topics[0].partitions[0].fetch_offset == 7


def test_from_a_leader_without_v12_the_follower_truncates_through_offset_for_leader_epoch(diverged):
    leader_broker, follower = diverged
    leader_broker.broker_versions[ApiKey.FETCH] = (4, 11)
    asyncio.run(_copy(leader_broker, follower, 10))
    assert batches(follower) == batches(leader_broker)
    versions = {(r.api_key, r.api_version) for r in leader_broker.requests}
    assert (ApiKey.OFFSET_FOR_LEADER_EPOCH, 3) in versions and (ApiKey.FETCH, 11) in versions
    assert (ApiKey.FETCH, 12) not in versions


def test_a_follower_behind_by_more_than_a_segment_catches_up(tmp_path):
    """The leader answers a follower with one segment's data at most, as
    Kafka reads, so what the follower appends never exceeds segment.bytes
    (which it would refuse, for ever, when behind by several segments)."""
    leader_broker = InProcessBroker(tmp_path / "l", 1)
    follower = InProcessBroker(tmp_path / "f", 2)
    try:
        for broker in (leader_broker, follower):
            broker.replica_manager.topic_overrides = lambda topic: {"segment.bytes": 1000}
        start(leader_broker, 1, 1, (1, 2))
        for _ in range(12):
            leader_broker.replica_manager.get("t", 0).append_records_to_leader(
                memoryview(make_batch(1, value_bytes=250)), 1)
        assert len(leader_broker.replica_manager.get("t", 0).log.segments) >= 4
        start(follower, 1, 1, (1, 2))
        asyncio.run(_copy(leader_broker, follower, 12))
        assert batches(follower) == batches(leader_broker)
    finally:
        leader_broker.close()
        follower.close()

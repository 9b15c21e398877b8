"""A follower whose disk fills: its log dir is a small tmpfs (root only;
skipped elsewhere) that a filler file fills while acks=all producers write
with min.insync.replicas=2 on 3 replicas.

The follower's appends fail with ENOSPC (KAFKA_STORAGE_ERROR). It is not
divergent and must not be treated so: it keeps its log (no truncation),
retries after replica.fetch.backoff.ms, stops advancing, and the leader
drops it from the ISR after replica.lag.time.max.ms and keeps acknowledging
with the other two. Once the tmpfs is enlarged (`mount -o remount`) it
catches up and rejoins the ISR. Every acknowledged record is read back
once, in order, and no replica's log ever holds at an offset a record other
than the leader's (each replica's own segments, read with dump-log)."""
from __future__ import annotations

import subprocess

import pytest

from kcore.testing.broker import TEST_SETTINGS
from kcore.testing.cluster import Cluster
from tests.cluster.test_failover import dump_values
from tests.support.cluster import ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress
from tests.support.tmpfs import fill, mounted_tmpfs

TOPIC = "full"
FOLLOWER = 3
# Room for the broker's own files (checkpoints, __consumer_offsets' sparse
# indexes) plus the first records; the filler then takes the rest.
TMPFS_SIZE = "32m"
ENLARGED_SIZE = "256m"


@pytest.fixture
def cluster_with_small_follower_disk(tmp_path, kcore_zookeeper):
    cluster = Cluster(tmp_path / "cluster", kcore_zookeeper.connect_string, 3, TEST_SETTINGS)
    follower_dir = cluster.brokers[FOLLOWER].data_dir
    with mounted_tmpfs(follower_dir, TMPFS_SIZE):
        try:
            yield cluster.start()
        finally:
            cluster.kill_all()


def remount(path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)


def test_a_follower_out_of_space_leaves_the_isr_keeps_its_log_and_catches_up(
        cluster_with_small_follower_disk):
    cluster = cluster_with_small_follower_disk
    follower = cluster.brokers[FOLLOWER]
    futures = cluster.admin.create_topics([_new_topic()])
    futures[TOPIC].result(timeout=30)
    cluster.wait_for(lambda: cluster.fully_replicated(TOPIC, 1, 3), "the topic is fully replicated")
    assert cluster.leader(TOPIC, 0) == 1
    load = ProducerLoad(cluster, TOPIC, 1, settings={"batch.size": 16384}, rate=20_000).start()
    try:
        wait_for_progress(cluster, load, 500, "the producer got going")
        fill(follower.data_dir, 0)
        cluster.wait_for(lambda: FOLLOWER not in cluster.partitions(TOPIC)[0].isrs,
                         f"broker {FOLLOWER} left the ISR", timeout=60)
        wait_for_progress(cluster, load, 3000, "acks=all flows with two in-sync replicas")
        stuck = dump_values(follower, TOPIC, 0)
        leader_values = dump_values(cluster.brokers[1], TOPIC, 0)
        assert stuck == leader_values[:len(stuck)] and len(stuck) < len(leader_values)
        remount(follower.data_dir, ENLARGED_SIZE)
        cluster.wait_for(lambda: cluster.fully_replicated(TOPIC, 1, 3),
                         f"broker {FOLLOWER} caught up and rejoined the ISR", timeout=60)
        wait_for_progress(cluster, load, 500, "acks flow with three replicas")
    finally:
        load.stop()
    assert load.errors == []
    found = consume_all(cluster, TOPIC, 1)
    assert check_acknowledged_survived(load, found) == load.acked_count()
    values = [int(value.split(":")[1]) for _, value in found[0]]
    assert values == list(range(len(values))), "lost or repeated records"
    for broker_id, broker in cluster.brokers.items():
        cluster.wait_for(lambda broker=broker: dump_values(broker, TOPIC, 0) == values,
                         f"broker {broker_id}'s log equals what was read")
    # The follower kept what it had when its disk filled, at the same offsets.
    assert values[:len(stuck)] == stuck
    log = follower.log()
    assert f"{TOPIC}-0: truncating" not in log and "checking for divergence" not in log
    assert "No space left on device" in log


def _new_topic():
    from confluent_kafka.admin import NewTopic
    return NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1, 2, FOLLOWER]],
                    config={"min.insync.replicas": "2"})

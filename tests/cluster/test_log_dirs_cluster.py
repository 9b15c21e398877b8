"""Several log dirs per broker in a 3-broker ZooKeeper cluster: a log dir
that fails (its tmpfs unmounted under the broker) goes offline alone, the
controller learns it through /log_dir_event_notification and moves the
leadership of its partitions to other replicas while a producer goes on
(every acknowledged record kept), and the broker keeps leading the
partitions of its other dir; `kcore reassign-partitions` moves a replica to
another broker and into a given log dir there, as Kafka's tool does.
Real ZooKeeper, real broker processes, confluent-kafka as the client."""
from __future__ import annotations

import json
import subprocess

from confluent_kafka.admin import NewTopic

from kcore.protocol.errors import ErrorCode
from tests.support.cli import kcore_cli
from tests.support.cluster import (
    Cluster,
    ProducerLoad,
    check_acknowledged_survived,
    consume_all,
    wait_for_progress,
)
from tests.support.log_dirs import describe, log_dirs_setting, placement, wait_for_move
from tests.support.tmpfs import mounted_tmpfs
from tests.support.wire import WireClient

FAST_CHECKS = {"log.flush.offset.checkpoint.interval.ms": "300"}


def jbod_cluster(tmp_path, zookeeper, dirs: dict[int, list]) -> Cluster:
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3, FAST_CHECKS)
    for broker_id, paths in dirs.items():
        cluster.brokers[broker_id].overrides["log.dirs"] = log_dirs_setting(*paths)
    return cluster.start()


def create_led_by(cluster: Cluster, topic: str, assignment: list[list[int]]) -> None:
    futures = cluster.admin.create_topics([NewTopic(topic, num_partitions=len(assignment),
                                                         replica_assignment=assignment)])
    futures[topic].result(timeout=30)
    cluster.wait_for(lambda: cluster.fully_replicated(topic, len(assignment), len(assignment[0])),
                     f"{topic} fully replicated")


def test_a_failed_dir_moves_its_leaderships_and_the_other_dir_keeps_serving(tmp_path, zookeeper):
    disk = tmp_path / "disk"
    with mounted_tmpfs(tmp_path / "volume", "64m") as volume:
        cluster = jbod_cluster(tmp_path, zookeeper, {1: [disk, volume]})
        try:
            create_led_by(cluster, "jbod", [[1, 2, 3], [1, 3, 2], [1, 2, 3], [1, 3, 2]])
            first = WireClient(cluster.brokers[1].port)
            where = placement(first)
            lost = sorted(p for p in range(4) if where[("jbod", p, False)] == str(volume))
            kept = sorted(p for p in range(4) if where[("jbod", p, False)] == str(disk))
            assert lost and kept
            load = ProducerLoad(cluster, "jbod", 4, max_seconds=120, rate=20_000).start()
            try:
                wait_for_progress(cluster, load, 2000, "acknowledged messages before the failure")
                subprocess.run(["umount", "-l", str(volume)], check=True)
                cluster.wait_for(lambda: all(cluster.leader("jbod", p) not in (1, -1) for p in lost),
                                 "new leaders for the partitions of the failed dir")
                partitions = cluster.partitions("jbod")
                assert all(1 not in partitions[p].isrs for p in lost)
                assert all(partitions[p].leader == 1 for p in kept)
                wait_for_progress(cluster, load, 2000, "acknowledged messages after the failure")
            finally:
                load.stop()
            assert not load.errors, load.errors[:3]
            found = consume_all(cluster, "jbod", 4, timeout=120)
            assert check_acknowledged_survived(load, found) == load.acked_count()
            offline = {r.log_dir: r.error_code for r in describe(first).results}
            assert offline == {str(disk): ErrorCode.NONE, str(volume): ErrorCode.KAFKA_STORAGE_ERROR}
            first.close()
        finally:
            cluster.kill_all()


def test_reassign_partitions_moves_a_replica_into_a_log_dir_of_another_broker(tmp_path, zookeeper):
    dirs = {broker_id: [tmp_path / f"b{broker_id}-{n}" for n in range(2)] for broker_id in (1, 2, 3)}
    cluster = jbod_cluster(tmp_path, zookeeper, dirs)
    try:
        create_led_by(cluster, "moved", [[1, 2]])
        load = ProducerLoad(cluster, "moved", 1, max_seconds=120, rate=20_000).start()
        try:
            wait_for_progress(cluster, load, 5000, "acknowledged messages before the move")
            target = str(dirs[3][1])
            plan = tmp_path / "plan.json"
            plan.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": "moved", "partition": 0, "replicas": [1, 3], "log_dirs": ["any", target]}]}))
            common = ["--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan)]
            done = kcore_cli("reassign-partitions", "--execute", *common)
            assert done.returncode == 0, done.stdout + done.stderr
            assert f"Successfully started moving log directory to {target} for replica moved-0 " \
                   "with broker 3" in done.stdout
            third = WireClient(cluster.brokers[3].port)
            wait_for_move(third, "moved", 0, dirs[3][1])
            cluster.wait_for(lambda: sorted(cluster.partitions("moved")[0].replicas) == [1, 3],
                             "the partition on brokers 1 and 3")
            wait_for_progress(cluster, load, 2000, "acknowledged messages after the move")
            verified = kcore_cli("reassign-partitions", "--verify", *common)
            assert verified.returncode == 0, verified.stdout + verified.stderr
            assert "Reassignment of replica moved-0-3 completed successfully." in verified.stdout
            third.close()
        finally:
            load.stop()
        assert not load.errors, load.errors[:3]
        found = consume_all(cluster, "moved", 1, timeout=120)
        assert check_acknowledged_survived(load, found) == load.acked_count()
    finally:
        cluster.kill_all()

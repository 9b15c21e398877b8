"""Operating a cluster: a rolling restart (SIGTERM, controlled shutdown)
under load, a consumer group whose coordinator dies, preferred leader
elections (on demand and automatic), and a ZooKeeper ensemble losing a
server. Real brokers, a real ZooKeeper, confluent-kafka clients."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer

from tests.support.cli import kcore_cli
from tests.support.cluster import Cluster, ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress

CONFIGS = {"min.insync.replicas": "2"}



def test_rolling_restart_under_load_loses_nothing_and_moves_leaders_first(cluster):
    cluster.create_topic("rolling", 3, 3, CONFIGS)
    client_errors: list = []
    load = ProducerLoad(cluster, "rolling", 3, rate=20_000,
                        settings={"error_cb": client_errors.append}).start()
    try:
        wait_for_progress(cluster, load, 1000, "the producer got going")
        for broker_id, broker in cluster.brokers.items():
            assert broker.stop() == 0
            # Controlled shutdown moved every leadership before the exit.
            assert all(cluster.leader("rolling", p) != broker_id for p in range(3))
            wait_for_progress(cluster, load, 500, f"acks flow without broker {broker_id}")
            broker.start()
            cluster.wait_for(lambda: cluster.fully_replicated("rolling", 3, 3),
                             f"broker {broker_id} back in every ISR")
        wait_for_progress(cluster, load, 500, "acks flow after the rolling restart")
    finally:
        load.stop()
    assert load.errors == []
    assert [e for e in client_errors if e.fatal() or not e.retriable() and
            e.code() not in TRANSPORT_ERRORS] == []
    found = consume_all(cluster, "rolling", 3)
    assert check_acknowledged_survived(load, found) == load.acked_count()


# librdkafka reports lost connections and brokers that are all away through
# error_cb; both are retried by the client, not errors of the application.
TRANSPORT_ERRORS = {-195, -187}  # _TRANSPORT, _ALL_BROKERS_DOWN


def test_a_group_keeps_consuming_when_its_coordinator_dies(cluster):
    cluster.create_topic("work", 3, 3, CONFIGS)
    first = ProducerLoad(cluster, "work", 3, max_messages=3000).start().finish()
    seen: set[str] = set()
    errors: list = []
    stop = threading.Event()

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "movers",
                             "auto.offset.reset": "earliest", "enable.auto.commit": True,
                             "auto.commit.interval.ms": 200, "session.timeout.ms": 6000})
        consumer.subscribe(["work"])
        deadline = time.monotonic() + 120
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is None:
                    continue
                if message.error() is not None:
                    errors.append(message.error())
                    continue
                seen.add(message.value().decode())
        finally:
            consumer.close()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    try:
        cluster.wait_for(lambda: len(seen) >= 3000, "the group consumed the first batch")
        coordinator = group_coordinator(cluster, "movers")
        cluster.brokers[coordinator].kill()
        second = ProducerLoad(cluster, "work", 3, max_messages=3000,
                              first_seq=1_000_000).start().finish()
        assert second.errors == []
        cluster.wait_for(lambda: len(seen) >= 3000 + second.acked_count(),
                         "the group consumed what came after its coordinator died", timeout=60)
        assert group_coordinator(cluster, "movers") != coordinator
    finally:
        stop.set()
        thread.join(30)
    produced = {f"{p}:{seq}" for load in (first, second)
                for p, acked in load.acked.items() for _, seq in acked}
    assert len(produced) == 6000 and produced <= seen
    assert [e for e in errors if e.fatal()] == []


def group_coordinator(cluster, group: str) -> int:
    found = cluster.admin.describe_consumer_groups([group])[group].result(timeout=10)
    return found.coordinator.id


def test_preferred_leaders_come_back_on_demand(cluster_factory):
    cluster = cluster_factory(3, {"auto.leader.rebalance.enable": "false"})
    cluster.create_topic("prefer", 3, 3)
    bounce(cluster, 1, "prefer")
    assert cluster.leader("prefer", 0) != 1  # broker 1 is back, but follows
    result = kcore_cli("topics", "elect-leaders", "--topic", "prefer", "--bootstrap-server", cluster.bootstrap)
    assert result.returncode == 0, result.stderr
    assert "Elected a new leader for prefer-0." in result.stdout
    assert "prefer-1: its preferred leader leads already." in result.stdout
    cluster.wait_for(lambda: [cluster.leader("prefer", p) for p in range(3)] == [1, 2, 3],
                     "each partition led by its preferred replica")


def test_preferred_leaders_come_back_by_themselves(cluster_factory):
    cluster = cluster_factory(3, {"leader.imbalance.check.interval.seconds": "1"})
    cluster.create_topic("balance", 3, 3)
    bounce(cluster, 2, "balance")
    cluster.wait_for(lambda: [cluster.leader("balance", p) for p in range(3)] == [1, 2, 3],
                     "the automatic rebalance gave partition 1 back to broker 2")


def bounce(cluster, broker_id: int, topic: str) -> None:
    """SIGKILL a broker, wait for its leaderships to move, start it again
    and wait until it is back in every ISR."""
    broker = cluster.brokers[broker_id]
    broker.kill()
    cluster.wait_for(lambda: all(cluster.leader(topic, p) not in (-1, broker_id)
                                 for p in range(3)), f"leaders moved off {broker_id}")
    broker.start()
    cluster.wait_for(lambda: cluster.fully_replicated(topic, 3, 3),
                     f"broker {broker_id} back in every ISR")


def test_a_zookeeper_ensemble_losing_a_server_keeps_the_cluster_working(tmp_path,
                                                                         zookeeper_ensemble):
    cluster = Cluster(tmp_path / "cluster", zookeeper_ensemble.connect_string)
    try:
        cluster.start()
        cluster.create_topic("before", 2, 3, CONFIGS)
        zookeeper_ensemble.stop_server(zookeeper_ensemble.leader())
        cluster.create_topic("after", 2, 3, CONFIGS)
        load = ProducerLoad(cluster, "after", 2, max_messages=2000).start()
        victim = cluster.wait_leader("after", 0)
        cluster.brokers[victim].kill()
        cluster.wait_for(lambda: cluster.leader("after", 0) not in (-1, victim),
                         "a leader elected with two ZooKeeper servers")
        load.finish()
        assert load.errors == []
        found = consume_all(cluster, "after", 2)
        assert check_acknowledged_survived(load, found) == load.acked_count() == 2000
    finally:
        cluster.kill_all()

"""/metrics of a real three-broker cluster while a follower falls behind
and comes back: ISR shrinks and expansions, under-replicated and
under-min-ISR partitions, and the bytes sent to followers, as the
leaders count them. A real ZooKeeper, confluent-kafka as the client."""
from __future__ import annotations

from tests.support import free_port
from tests.support.cluster import Cluster
from tests.support.compat import make_messages
from tests.support.confluent import produce
from tests.support.metrics import scrape

TOPIC = "watched"
PARTITIONS = 2
# Longer than the test: the paused follower keeps its ZooKeeper session,
# so only its leaders' ISR shrink (after replica.lag.time.max.ms, 3 s)
# takes it out, never the controller's broker-death path.
SESSION_TIMEOUT_MS = "60000"


def total(ports: dict[int, int], name: str, labels: tuple = ()) -> float:
    return sum(scrape(f"http://127.0.0.1:{port}").get((name, labels), 0.0) for port in ports.values())


def test_isr_changes_and_under_replicated_partitions_are_counted(tmp_path, zookeeper):
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3,
                      {"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["http.listeners"] = f"http://127.0.0.1:{ports[broker_id]}"
    try:
        cluster.start()
        cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "3"})
        produce(cluster.bootstrap, TOPIC, make_messages(400, "m", PARTITIONS), acks="all")
        replicated = ("kafka_server_brokertopicmetrics_replicationbytesout_total", (("topic", TOPIC),))
        cluster.wait_for(lambda: total(ports, *replicated) > 0, "the leaders count bytes to followers")
        assert total(ports, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        shrinks_before = total(ports, "kafka_server_replicamanager_isrshrinks_total")

        follower = next(i for i in cluster.brokers if all(
            p.leader != i for p in cluster.partitions(TOPIC).values()))
        cluster.brokers[follower].pause()
        others = {i: port for i, port in ports.items() if i != follower}
        cluster.wait_for(lambda: total(others, "kafka_server_replicamanager_underreplicatedpartitions")
                         == PARTITIONS, "both partitions under-replicated")
        assert total(others, "kafka_server_replicamanager_isrshrinks_total") >= shrinks_before + PARTITIONS
        assert total(others, "kafka_server_replicamanager_underminisrpartitioncount") == PARTITIONS

        expands_before = total(others, "kafka_server_replicamanager_isrexpands_total")
        cluster.brokers[follower].resume()
        cluster.wait_for(lambda: total(others, "kafka_server_replicamanager_underreplicatedpartitions")
                         == 0, "the follower back in every ISR")
        assert total(others, "kafka_server_replicamanager_isrexpands_total") >= expands_before + PARTITIONS
        assert total(others, "kafka_server_replicamanager_underminisrpartitioncount") == 0
    finally:
        cluster.kill_all()

"""Brokers close each other's idle connections too (connections.max.idle.ms
applies to every listener): the controller's channels, quiet once a topic
is created, are closed by the brokers they lead to, and the next request
opens new ones, so a cluster left quiet past the limit still works. The
connections are read from the kernel (ss(8)), by socket inode."""
from __future__ import annotations

from confluent_kafka import Producer

from tests.support.sockets import established

IDLE_MS = 3000  # the snapshot after a create must come before the close


def test_a_cluster_quiet_past_the_idle_limit_closes_reopens_and_replicates(cluster_factory):
    cluster = cluster_factory(overrides={"connections.max.idle.ms": str(IDLE_MS)})
    cluster.create_topic("before", 1, 3)
    controller = cluster.brokers[cluster.metadata().controller_id].process.pid
    pids = [broker.process.pid for broker in cluster.brokers.values()]
    ports = {broker.port for broker in cluster.brokers.values()}

    def held_by_controller():
        return {c for c in established(pids, ports) if c.pid == controller}

    # The controller has a channel to every broker, itself included (the
    # LeaderAndIsr of "before" went over them), and may fetch as a follower.
    channels = held_by_controller()
    assert {c.peer_port for c in channels} == ports, channels
    # Replica fetchers long-poll and never go quiet; the channels do, and
    # each broker closes the one to it.
    cluster.wait_for(lambda: {c.peer_port for c in channels - held_by_controller()} == ports,
                     f"each broker closed the controller's channel, idle past {IDLE_MS} ms",
                     timeout=10 * IDLE_MS / 1000)

    cluster.create_topic("after", 2, 3)  # LeaderAndIsr/UpdateMetadata on new connections
    reopened = held_by_controller() - channels
    assert {c.peer_port for c in reopened} == ports, reopened
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    delivered = []
    for i in range(50):
        producer.produce("after", value=b"v%d" % i, partition=i % 2,
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 50
    cluster.wait_for(lambda: cluster.fully_replicated("after", 2, 3), "ISR of 3 on 'after'")

"""A consumer-protocol group (KIP-848) survives the loss of its coordinator:
the broker leading the group's __consumer_offsets partition is SIGKILLed,
a follower becomes the leader and replays the group's records, and the
members carry on with the same epochs and partitions (nothing revoked,
nothing lost) and keep consuming. Real brokers, a real ZooKeeper,
confluent-kafka members in their own processes."""
from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient

from kcore.coordinator.group.records import partition_for
from tests.support.compat import make_messages, wait_until
from tests.support.confluent import produce
from tests.support.group_members import start_member

SETTINGS = {"group.consumer.session.timeout.ms": "10000", "group.consumer.heartbeat.interval.ms": "500",
            "group.initial.rebalance.delay.ms": "0"}
WAIT_S = 60.0


def test_coordinator_failover_keeps_the_assignment(cluster_factory, tmp_path):
    cluster = cluster_factory(3, SETTINGS)
    cluster.create_topic("events", 6, 3)
    members = [start_member(name, tmp_path, cluster.bootstrap, "gf", "events") for name in "ab"]
    try:
        wait_until(lambda: sorted(len(m.assignment()) for m in members) == [3, 3], WAIT_S,
                   "two members owning three partitions each")
        produce(cluster.bootstrap, "events", make_messages(120, "before", 6))
        wait_until(lambda: len({k for m in members for k in m.consumed()}) == 120, WAIT_S, "first batch read")
        before = {m.name: m.assignment() for m in members}
        seen = {m.name: len(m.events()) for m in members}
        offsets_partition = partition_for("gf", len(cluster.partitions("__consumer_offsets")))
        coordinator = cluster.wait_leader("__consumer_offsets", offsets_partition)
        cluster.brokers[coordinator].kill()
        killed_at = time.monotonic()
        cluster.wait_for(lambda: cluster.leader("__consumer_offsets", offsets_partition) not in (-1, coordinator),
                         "a new coordinator for the group")
        produce(cluster.bootstrap, "events", make_messages(120, "after", 6))
        wait_until(lambda: len({k for m in members for k in m.consumed()}) == 240, WAIT_S,
                   "second batch read after the failover")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        described = admin.describe_consumer_groups(["gf"])["gf"].result(30)
        assert described.type.name == "CONSUMER" and len(described.members) == 2
        assert sorted(len(m.assignment.topic_partitions) for m in described.members) == [3, 3]
        for member in members:
            assert member.assignment() == before[member.name]
            later = member.events()[seen[member.name]:]
            assert not [e for e in later if e["event"] in ("revoke", "assign") and e["partitions"]], later
        assert time.monotonic() - killed_at < WAIT_S
    finally:
        for member in members:
            member.stop()

"""Share groups (KIP-932) in a 3-broker cluster over a real ZooKeeper:
four ShareConsumers share one partition, then the broker leading the
partition's ``__share_group_state`` partition (its share coordinator) is
SIGKILLed: a follower takes the state over from the replicated log and
the group goes on where it was, with nothing acknowledged delivered
again and nothing lost."""
from __future__ import annotations

import pytest

from kcore.coordinator.share.records import ShareKey, state_partition_for
from kcore.testing.wire import WireClient, topic_id_of
from tests.support.share import (
    Consumed,
    consume,
    consume_together,
    produce,
    set_group_configs,
    share_consumer,
    unique,
)

pytestmark = pytest.mark.timeout(300)

SETTINGS = {"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": "3",
            "share.coordinator.state.topic.num.partitions": "3",
            "share.coordinator.state.topic.min.isr": "2", "min.insync.replicas": "2",
            "group.share.record.lock.duration.ms": "5000"}


def test_share_group_goes_on_after_its_share_coordinator_is_killed(cluster_factory):
    cluster = cluster_factory(3, SETTINGS)
    topic, group = unique("share-cluster"), unique("g")
    cluster.create_topic(topic, 1, 3)
    set_group_configs([b.bootstrap_servers for b in cluster.brokers.values()], group,
                      {"share.auto.offset.reset": "earliest"})
    produce(cluster.bootstrap, topic, 400, batch_records=25)
    consumers = [share_consumer(cluster.bootstrap, group, topic, **{"max.poll.records": "25"})
                 for _ in range(4)]
    first = consume_together(consumers, 200)
    before = sorted(offset for result in first for offset in result.offsets)
    assert len(before) == len(set(before)), "no record went to two consumers"
    assert before, "the group consumed"
    wire = WireClient(next(iter(cluster.brokers.values())).port)
    try:
        topic_id = topic_id_of(wire, topic)
    finally:
        wire.close()
    state_partition = state_partition_for(ShareKey(group, topic_id, 0), 3)
    victim = cluster.wait_leader("__share_group_state", state_partition)
    cluster.brokers[victim].kill()
    cluster.wait_for(lambda: cluster.leader("__share_group_state", state_partition) not in (victim, -1),
                     "a new share coordinator")
    rest = consume(share_consumer(cluster.bootstrap, group, topic), 400 - len(before), Consumed(),
                   idle_s=10, limit_s=120)
    assert sorted(before + rest.offsets) == list(range(400)), \
        "after the failover: every record once, none of those acknowledged before again"

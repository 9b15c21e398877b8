"""A topic deleted and created again under its name on a three-broker
cluster while a librdkafka producer keeps writing it
(tests/support/recreate.py): a restart of broker 1 first moves its
leaderships away, so the old topic's leader epochs are above the new
one's."""
from __future__ import annotations

from tests.support.recreate import recreate_while_producing

NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}


def test_a_producer_goes_on_into_a_recreated_topic_on_a_cluster(cluster_factory):
    cluster = cluster_factory(3, NO_AUTO_CREATE)

    def bump_epochs():
        cluster.brokers[1].stop()
        cluster.brokers[1].start()
        cluster.wait_for(lambda: len(cluster.metadata().brokers) == 3, "broker 1 back")

    recreate_while_producing(cluster.bootstrap, "recreated", (6, 3), 3, bump_epochs)

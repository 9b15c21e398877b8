"""A topic deleted and created again under its name on a single node while
a librdkafka producer keeps writing it (tests/support/recreate.py): a
restart gives every partition a new leader epoch first, so the old topic's
epochs are above the new one's."""
from __future__ import annotations

from tests.support.recreate import recreate_while_producing

NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}


def test_a_producer_goes_on_into_a_topic_recreated_with_fewer_partitions(broker_factory):
    broker = broker_factory(NO_AUTO_CREATE)
    recreate_while_producing(broker.bootstrap, "recreated", (6, 2), 1, lambda: broker.restart())


def test_a_producer_goes_on_into_a_topic_recreated_with_more_partitions(broker_factory):
    broker = broker_factory(NO_AUTO_CREATE)
    recreate_while_producing(broker.bootstrap, "regrown", (2, 6), 1, lambda: broker.restart())

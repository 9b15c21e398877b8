"""Real kcore brokers for tests: a pytest plugin, context managers, helpers.

For pytest users the plugin (kcore.testing.plugin, registered through the
``pytest11`` entry point) gives the fixtures ``kcore_broker``,
``kcore_broker_factory``, ``kcore_embedded_broker``, ``kcore_zookeeper``,
``kcore_cluster`` and ``kcore_cluster_factory``. Anyone else takes a
context manager::

    import kcore.testing

    with kcore.testing.broker() as b:        # a broker subprocess
        ...b.bootstrap_servers...
    with kcore.testing.embedded_broker() as b:  # in this process, a thread
        ...
    with kcore.testing.cluster() as c:       # ZooKeeper + 3 brokers
        ...c.bootstrap_servers...

Lower-level tools: kcore.testing.wire (exact request frames on one
connection) and kcore.testing.batches (v2 RecordBatches, valid or broken).
docs/testing.md has the details and the figures.
"""
from kcore.testing.broker import TEST_SETTINGS, BrokerProcess, broker
from kcore.testing.cli import kcore_cli, kcore_command
from kcore.testing.cluster import Cluster, cluster
from kcore.testing.embedded import EmbeddedBroker, embedded_broker
from kcore.testing.ports import free_port, free_ports
from kcore.testing.zookeeper import ZooKeeperEnsemble, ZooKeeperServer

__all__ = [
    "TEST_SETTINGS",
    "BrokerProcess",
    "Cluster",
    "EmbeddedBroker",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
    "broker",
    "cluster",
    "embedded_broker",
    "free_port",
    "free_ports",
    "kcore_cli",
    "kcore_command",
]

"""The pytest plugin of kcore.testing, registered through the ``pytest11``
entry point (name ``kcore``): installing kcore is enough to use these
fixtures in any project's tests::

    kcore_broker            a started broker subprocess, data in tmp_path
    kcore_broker_factory    start(overrides=None) -> one more started broker
    kcore_embedded_broker   a broker in the test's own process (a thread)
    kcore_zookeeper         a standalone ZooKeeper (Debian's jars, Java)
    kcore_cluster           ZooKeeper and 3 brokers (ids 1, 2, 3), started
    kcore_cluster_factory   start(n=3, overrides=None, racks=None) -> a cluster

Every fixture is function-scoped and kills what it started when the test
ends, whatever the test did. Brokers get `TEST_SETTINGS` under the test's
overrides. The names all start with ``kcore_`` so that none shadows a
project's own ``broker`` or ``cluster`` fixture.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from kcore.testing.broker import TEST_SETTINGS, BrokerProcess
from kcore.testing.cluster import Cluster
from kcore.testing.embedded import EmbeddedBroker
from kcore.testing.zookeeper import ZooKeeperServer

BrokerFactory = Callable[..., BrokerProcess]
ClusterFactory = Callable[..., Cluster]


@pytest.fixture
def kcore_broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """``start(overrides=None)``: one more started broker subprocess, on a
    free loopback port with its data under ``tmp_path``; all are killed
    when the test ends."""
    started: list[BrokerProcess] = []

    def start(overrides: Mapping[str, str] | None = None) -> BrokerProcess:
        data_dir = tmp_path / f"kcore-broker-{len(started)}" / "data"
        broker = BrokerProcess(data_dir, {**TEST_SETTINGS, **(overrides or {})})
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.kill()


@pytest.fixture
def kcore_broker(kcore_broker_factory: BrokerFactory) -> BrokerProcess:
    """A started broker subprocess: ``kcore_broker.bootstrap_servers``."""
    return kcore_broker_factory()


@pytest.fixture
def kcore_embedded_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A broker serving from a thread of the test's process: starts in
    milliseconds, but shares the process (kcore.testing.embedded says when
    that is safe)."""
    with EmbeddedBroker(tmp_path / "kcore-embedded" / "data", TEST_SETTINGS) as broker:
        yield broker


@pytest.fixture
def kcore_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A standalone ZooKeeper server, serving (needs Java and ZooKeeper's
    jars: Debian's zookeeper package, or KCORE_ZOOKEEPER_JARS)."""
    server = ZooKeeperServer(tmp_path / "kcore-zookeeper")
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture
def kcore_cluster_factory(tmp_path: Path, kcore_zookeeper: ZooKeeperServer) -> Iterator[ClusterFactory]:
    """``start(n=3, overrides=None, racks=None)``: one more started cluster
    of ``n`` brokers (``racks``: broker id -> broker.rack) on the test's
    ZooKeeper; every broker is killed when the test ends. The first
    cluster keeps its metadata under /kcore, the i-th after it under
    /cluster-i/kcore."""
    started: list[Cluster] = []

    def start(n: int = 3, overrides: Mapping[str, str] | None = None,
              racks: Mapping[int, str] | None = None) -> Cluster:
        index = len(started)
        connect = kcore_zookeeper.connect_string + (f"/cluster-{index}" if index else "")
        cluster = Cluster(tmp_path / f"kcore-cluster-{index}", connect, n,
                          {**TEST_SETTINGS, **(overrides or {})}, racks)
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        cluster.kill_all()


@pytest.fixture
def kcore_cluster(kcore_cluster_factory: ClusterFactory) -> Cluster:
    """Three started brokers (ids 1, 2, 3) and their ZooKeeper:
    ``kcore_cluster.bootstrap_servers``, ``kcore_cluster.create_topic(...)``."""
    return kcore_cluster_factory()

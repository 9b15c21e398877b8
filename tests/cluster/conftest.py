"""Real ZooKeeper servers for the cluster tests, killed after each test.

A standalone server serves ~0.35 s after launch and a 3-server ensemble
has its leader after 1-1.7 s (two cores), so every test gets fresh ones:
no state, paused process or stopped member leaks into the next test.
"""
import pytest

from kcore.testing.zookeeper import ZooKeeperEnsemble
from tests.support.cluster import Cluster


@pytest.fixture
def zookeeper_ensemble(tmp_path):
    """A ZooKeeperEnsemble of 3, with a leader and two followers."""
    ensemble = ZooKeeperEnsemble(tmp_path / "ensemble", n=3)
    try:
        yield ensemble.start()
    finally:
        ensemble.kill()


@pytest.fixture
def cluster_factory(tmp_path, zookeeper):
    """cluster_factory(n=3, overrides=None, racks=None) -> a started Cluster
    on the test's ZooKeeper; every broker is killed at the end."""
    started: list[Cluster] = []

    def start(n: int = 3, overrides: dict[str, str] | None = None,
              racks: dict[int, str] | None = None) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster-{len(started)}", zookeeper.connect_string, n,
                          overrides, racks)
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        cluster.kill_all()


@pytest.fixture
def cluster(cluster_factory):
    """Three brokers (ids 1, 2, 3), started."""
    return cluster_factory()

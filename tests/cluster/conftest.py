"""Real ZooKeeper servers for the cluster tests, killed after each test.

A standalone server serves ~0.35 s after launch and a 3-server ensemble
has its leader after 1-1.7 s (two cores), so every test gets fresh ones:
no state, paused process or stopped member leaks into the next test.
"""
import pytest

from kcore.testing.zookeeper import ZooKeeperEnsemble


@pytest.fixture
def zookeeper_ensemble(tmp_path):
    """A ZooKeeperEnsemble of 3, with a leader and two followers."""
    ensemble = ZooKeeperEnsemble(tmp_path / "ensemble", n=3)
    try:
        yield ensemble.start()
    finally:
        ensemble.kill()


@pytest.fixture
def cluster_factory(kcore_cluster_factory):
    """cluster_factory(n=3, overrides=None, racks=None) -> a started Cluster
    on the test's ZooKeeper (the ``zookeeper`` fixture); every broker is
    killed at the end (kcore.testing.plugin's)."""
    return kcore_cluster_factory


@pytest.fixture
def cluster(kcore_cluster):
    """Three brokers (ids 1, 2, 3), started."""
    return kcore_cluster

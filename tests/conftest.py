import pytest

from kcore.testing.zookeeper import ZooKeeperServer
from tests.support import BrokerProcess


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers on demand; all are killed at the end of the test."""
    started: list[BrokerProcess] = []

    def start(overrides: dict[str, str] | None = None, name: str = "data") -> BrokerProcess:
        broker = BrokerProcess(tmp_path / name, overrides).start()
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.kill()


@pytest.fixture
def broker(broker_factory):
    return broker_factory()


@pytest.fixture(scope="session")
def spark():
    """The run's one Spark session (tests/support/spark.py)."""
    from tests.support.spark import spark_session
    session = spark_session()
    yield session
    session.stop()


@pytest.fixture
def zookeeper(tmp_path):
    """A standalone ZooKeeperServer, serving."""
    server = ZooKeeperServer(tmp_path / "zookeeper")
    try:
        yield server.start()
    finally:
        server.kill()

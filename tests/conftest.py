"""Fixtures shared by every suite.

Every encoder built in this process, and in every broker, worker or client
process a test starts (they inherit the environment), refuses dict keys
that no version of their struct defines (KCORE_STRICT_KEYS, see
kcore/protocol/encoder.py): a misspelt key in an answer fails the test
instead of sending a default. Encoders read the variable when first built,
after this module is imported."""
import os

import pytest

from kcore.protocol.encoder import STRICT_KEYS_ENV
from tests.support import BrokerProcess
from tests.support.zookeeper import ZooKeeperServer

os.environ[STRICT_KEYS_ENV] = "1"


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

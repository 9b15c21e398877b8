"""Fixtures shared by every suite.

Every encoder built in this process, and in every broker, worker or client
process a test starts (they inherit the environment), refuses dict keys
that no version of their struct defines (KCORE_STRICT_KEYS, see
kcore/protocol/encoder.py): a misspelt key in an answer fails the test
instead of sending a default. Encoders read the variable when first built,
after this module is imported."""
import os
from importlib.metadata import entry_points

import pytest

from kcore.protocol.encoder import STRICT_KEYS_ENV
from tests.support import BrokerProcess

# kcore.testing.plugin (the kcore_* fixtures) comes through the pytest11
# entry point of the installed package; a checkout on PYTHONPATH, or an
# environment whose kcore was installed before that entry point existed,
# loads it here instead (loading it both ways is an error).
if not any(ep.value == "kcore.testing.plugin" for ep in entry_points(group="pytest11")):
    pytest_plugins = ["kcore.testing.plugin"]

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
def zookeeper(kcore_zookeeper):
    """A standalone ZooKeeperServer, serving (kcore.testing.plugin's)."""
    return kcore_zookeeper

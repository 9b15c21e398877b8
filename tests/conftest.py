"""Fixtures shared by every suite.

Every encoder built in this process, and in every broker, worker or client
process a test starts (they inherit the environment), refuses dict keys
that no version of their struct defines (KCORE_STRICT_KEYS, see
kcore/protocol/encoder.py): a misspelt key in an answer fails the test
instead of sending a default. Encoders read the variable when first built,
after this module is imported."""
import os
from importlib.metadata import entry_points
from pathlib import Path

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

TESTS = Path(__file__).parent
# Test files marked `serial`: `make test` runs the rest on several
# pytest-xdist workers, then these in one process, with the machine to
# themselves. Their results are rates and timings (bench, quotas), they
# build the package or start JVMs (CPU that would stretch the parallel
# tests' deadlines: the wheel build, Spark), they bind a default port
# (9644), or they cut networks and stop processes on purpose (faults).
SERIAL = ("faults/", "spark/", "schema_registry/test_spark.py", "integration/test_bench_",
          "integration/test_wheel_install.py", "integration/test_http_listener_ports.py",
          "security/test_quotas.py")


def pytest_collection_modifyitems(items):
    # Every item of the run comes here, bench/'s too when both are named.
    for item in items:
        if item.path.is_relative_to(TESTS) and item.path.relative_to(TESTS).as_posix().startswith(SERIAL):
            item.add_marker(pytest.mark.serial)


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

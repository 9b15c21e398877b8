import pytest

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

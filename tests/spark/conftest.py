import pytest

from tests.support import BrokerProcess


@pytest.fixture(scope="module")
def kafka(tmp_path_factory) -> BrokerProcess:
    """One broker for a module's Spark tests; retention runs every 0.5 s so
    a topic with a short retention.ms loses its oldest segments quickly."""
    broker = BrokerProcess(tmp_path_factory.mktemp("spark") / "data",
                           {"num.partitions": "4", "log.retention.check.interval.ms": "500",
                            "http.listeners": ""}).start()
    yield broker
    broker.kill()

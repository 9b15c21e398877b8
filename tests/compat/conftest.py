import pytest
from kafka import KafkaAdminClient

from tests.support.compat import start_broker


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """One broker per client module (8 partitions per auto-created topic);
    tests that stop, kill or proxy a broker start their own."""
    broker = start_broker(tmp_path_factory.mktemp("compat") / "data")
    yield broker
    broker.kill()


@pytest.fixture
def admin(shared_broker):
    """A kafka-python admin client of the module's broker."""
    client = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    yield client
    client.close()

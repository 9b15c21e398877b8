import pytest

from tests.support.compat import start_broker


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """One broker per client module (8 partitions per auto-created topic);
    tests that stop, kill or proxy a broker start their own."""
    broker = start_broker(tmp_path_factory.mktemp("compat") / "data")
    yield broker
    broker.kill()

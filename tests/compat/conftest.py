import pytest
from kafka import KafkaAdminClient

from tests.support.compat import start_broker

# Core cases (marked `processes`) also run against a node of two broker
# processes (num.processes=2): the CI machine has two cores.
NODE_PROCESSES = 2


def pytest_generate_tests(metafunc):
    if "shared_broker" not in metafunc.fixturenames:
        return
    counts = [1, NODE_PROCESSES] if metafunc.definition.get_closest_marker("processes") else [1]
    metafunc.parametrize("shared_broker", counts, indirect=True, scope="module",
                         ids=[f"processes={n}" for n in counts])


@pytest.fixture(scope="module")
def shared_broker(request, tmp_path_factory):
    """One broker per client module and process count (8 partitions per
    auto-created topic); tests that stop, kill or proxy a broker start their
    own."""
    processes = request.param
    overrides = {"num.processes": str(processes)} if processes > 1 else {}
    broker = start_broker(tmp_path_factory.mktemp(f"compat-{processes}") / "data", overrides)
    yield broker
    broker.kill()


@pytest.fixture
def admin(shared_broker):
    """A kafka-python admin client of the module's broker."""
    client = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    yield client
    client.close()

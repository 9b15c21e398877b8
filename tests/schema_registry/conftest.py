"""A broker serving the schema registry on a free port, shared by a
module's tests; each test takes subjects of its own."""
from __future__ import annotations

import itertools

import pytest

from tests.support import BrokerProcess, free_port
from tests.support.registry import RegistryBroker

_names = itertools.count()


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> RegistryBroker:
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("registry") / "data",
                           {"http.listeners": "", "group.initial.rebalance.delay.ms": "0",
                            "schema.registry.listeners": f"http://127.0.0.1:{port}"}).start()
    try:
        yield RegistryBroker(broker, f"http://127.0.0.1:{port}")
    finally:
        broker.kill()


@pytest.fixture
def subject(request) -> str:
    """A subject name no other test of the run uses."""
    return f"{request.node.name.replace('[', '-').replace(']', '')}-{next(_names)}-value"

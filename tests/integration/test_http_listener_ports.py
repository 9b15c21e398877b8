"""A taken port in ``http.listeners`` or ``schema.registry.listeners``:
set by the operator, it stops the broker with an error naming it (as a
taken Kafka listener does); left at its default, it is logged and skipped,
so several brokers of one machine start."""
from __future__ import annotations

import socket
import time

import pytest

from tests.support import BrokerProcess, free_port
from tests.support.refused_start import held, run_broker_to_exit

HTTP_DEFAULT_PORT = 9644  # kcore/config.py's http.listeners default


@pytest.mark.parametrize("key", ["http.listeners", "schema.registry.listeners"])
def test_a_taken_port_the_operator_set_stops_the_broker(tmp_path, key):
    port = free_port()
    other = "schema.registry.listeners" if key == "http.listeners" else "http.listeners"
    with held(port):
        result = run_broker_to_exit(tmp_path / "data", free_port(), {key: f"http://127.0.0.1:{port}", other: ""})
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{key}: cannot listen on http://127.0.0.1:{port}" in result.stderr


def test_a_taken_default_http_port_is_skipped_and_kafka_is_served(tmp_path):
    with held(HTTP_DEFAULT_PORT):
        broker = BrokerProcess(tmp_path / "data", {"schema.registry.listeners": ""}).start()
        try:
            deadline = time.monotonic() + 10  # logged just after the Kafka listeners bind
            while "cannot listen on http://127.0.0.1:9644" not in broker.log() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "http.listeners: cannot listen on http://127.0.0.1:9644" in broker.log()
            with socket.create_connection(("127.0.0.1", broker.port), timeout=5):
                pass
        finally:
            assert broker.stop() == 0

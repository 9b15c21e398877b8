"""kcore.testing's embedded broker (a broker on its own event loop in a
thread of the test process): it serves a real client, stops without
leaving a thread behind, and reports a start that cannot succeed to the
caller instead of losing it in its thread."""
from __future__ import annotations

import socket
import threading

import pytest

from kcore.testing import TEST_SETTINGS, EmbeddedBroker, free_port
from tests.support.round_trip import round_trip


def threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def test_embedded_broker_serves_a_client_and_leaves_no_thread(tmp_path):
    before = threads()
    with EmbeddedBroker(tmp_path / "data", TEST_SETTINGS) as broker:
        assert broker.running
        assert round_trip(broker.bootstrap_servers, "embedded", b"value") == b"value"
    assert not broker.running
    assert threads() <= before, threads() - before
    with pytest.raises(RuntimeError, match="starts once"):
        broker.start()


def test_a_port_in_use_fails_the_start_in_the_callers_thread(tmp_path):
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        before = threads()
        broker = EmbeddedBroker(tmp_path / "data", TEST_SETTINGS, port=port)
        with pytest.raises(RuntimeError, match="did not start") as raised:
            broker.start()
        assert isinstance(raised.value.__cause__, OSError)
        assert not broker.running
        assert threads() <= before, threads() - before


def test_a_node_of_processes_is_refused(tmp_path):
    with pytest.raises(ValueError, match="num.processes"):
        EmbeddedBroker(tmp_path / "data", {"num.processes": "2"})

"""connections.max.idle.ms: the broker closes connections without traffic
for that long, and only those."""
from __future__ import annotations

import time

import pytest

from kcore.protocol.api_keys import ApiKey
from tests.support.wire import WireClient, create_topic, fetch

IDLE_MS = 1000


@pytest.fixture
def idle_broker(broker_factory):
    return broker_factory({"connections.max.idle.ms": str(IDLE_MS)})


def _api_versions(client: WireClient) -> None:
    assert client.request(ApiKey.API_VERSIONS, 3, {}).error_code == 0


def test_an_idle_connection_is_closed_and_a_busy_one_kept(idle_broker):
    quiet, busy = WireClient(idle_broker.port), WireClient(idle_broker.port)
    try:
        _api_versions(quiet)
        started = time.monotonic()
        while time.monotonic() - started < 3 * IDLE_MS / 1000:  # bounded: 3 s
            _api_versions(busy)  # every 200 ms, well inside the limit
            time.sleep(0.2)
        assert quiet.is_closed_by_peer(timeout=1)
        _api_versions(busy)
    finally:
        quiet.close()
        busy.close()


def test_a_long_poll_longer_than_the_limit_is_answered(idle_broker):
    client = WireClient(idle_broker.port)
    try:
        create_topic(client, "t")
        started = time.monotonic()
        answer = fetch(client, "t", 0, max_wait_ms=2 * IDLE_MS)
        assert answer.error_code == 0 and time.monotonic() - started >= 1.9
    finally:
        client.close()

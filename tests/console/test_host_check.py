"""The console answers only Host names of this broker (DNS rebinding
guard, kcore/server/http_hosts.py); /metrics answers any."""
from __future__ import annotations

import http.client
import socket

import pytest

from kcore.server.http_hosts import AllowedHosts, host_of
from tests.support import BrokerProcess, free_port
from tests.support.compat import wait_until


def _status(port: int, path: str, host: str | None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.putrequest("GET", path, skip_host=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def http_port(tmp_path_factory):
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("hosts") / "data",
                           {"http.listeners": f"http://127.0.0.1:{port}",
                            "http.allowed.hosts": "console.example.com"}).start()
    # start() returns once the Kafka listener accepts; the HTTP listener is
    # bound just after it (CI once connected in between).
    wait_until(lambda: _accepts(port), 10, "the HTTP listener to accept", interval=0.05)
    yield port
    broker.kill()


@pytest.mark.parametrize("path", ["/", "/api/topics", "/static/app.js"])
def test_a_foreign_host_gets_no_console(http_port, path):
    assert _status(http_port, path, f"attacker.example:{http_port}") == 403


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}",
                                  "console.example.com", "{hostname}:{port}", None])
def test_own_names_addresses_and_configured_hosts_get_the_console(http_port, host):
    if host is not None:
        host = host.format(port=http_port, hostname=socket.gethostname())
    assert _status(http_port, "/api/topics", host) == 200


def test_metrics_answer_any_host(http_port):
    assert _status(http_port, "/metrics", "prometheus-target.internal:9644") == 200


def test_host_parsing_and_the_wildcard():
    assert host_of("Example.COM:9644") == "example.com"
    assert host_of("[fe80::1]:80") == "fe80::1" and host_of("::1") == "::1"
    assert AllowedHosts(["*"], []).allows("anything.example")
    assert not AllowedHosts([], ["broker-1"]).allows("broker-2:9644")
    assert AllowedHosts([], ["broker-1"]).allows("BROKER-1:9644")

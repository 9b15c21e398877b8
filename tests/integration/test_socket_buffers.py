"""socket.send.buffer.bytes / socket.receive.buffer.bytes reach the
connections the broker accepts, read back from the kernel with ss(8)."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.wire import WireClient


def _server_side_skmem(port: int) -> tuple[int, int]:
    """(receive, send) buffer bytes of the broker's end of a connection."""
    shown = subprocess.run(["ss", "-tmnH", "state", "established", f"sport = :{port}"],
                           capture_output=True, text=True, check=True).stdout
    match = re.search(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)", shown)
    assert match, shown
    return int(match.group(1)), int(match.group(2))


def test_configured_sizes_are_set_on_accepted_connections(broker_factory):
    broker = broker_factory({"socket.send.buffer.bytes": "60000", "socket.receive.buffer.bytes": "70000"})
    client = WireClient(broker.port)
    try:
        # Linux doubles a value set with setsockopt (man 7 socket).
        assert _server_side_skmem(broker.port) == (140000, 120000)
    finally:
        client.close()


def test_minus_one_keeps_the_os_default(broker_factory):
    broker = broker_factory({"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1"})
    client = WireClient(broker.port)
    try:
        receive, send = _server_side_skmem(broker.port)
        with open("/proc/sys/net/ipv4/tcp_rmem") as rmem:
            default_receive = int(rmem.read().split()[1])
        assert receive == default_receive and send not in (120000, 204800)
    finally:
        client.close()


@pytest.mark.parametrize("value", ["0", "-2"])
def test_a_size_neither_positive_nor_minus_one_is_refused(value):
    from kcore.config import BrokerConfig, ConfigError
    with pytest.raises(ConfigError, match="socket.send.buffer.bytes"):
        BrokerConfig({"socket.send.buffer.bytes": value})

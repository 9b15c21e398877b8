"""Free loopback ports for brokers, ZooKeeper servers and proxies in tests.

A port is picked below the kernel's ephemeral range: a port the kernel hands
out to outgoing connections can be taken by any client between this pick and
the server's bind (seen: port + 1 of a two-process node, taken by a test's
own client connection). Nor is a port handed out twice in a row of picks:
"nothing is bound to it" holds for every port picked before any of them is
bound (seen: a broker's own listener got the port just picked for its
http.listeners, and its console was not served).

Under pytest-xdist each worker picks from its own slice of the range: the
"nothing is bound to it" check cannot see a port another worker picked a
moment ago and has not bound yet.
"""
from __future__ import annotations

import collections
import os
import random
import socket

# Under the ephemeral range (Linux: 32768-60999) and above the well-known
# and registered ports most services on a developer's machine use.
FIRST_TEST_PORT = 10_000
# System randomness: pytest-randomly reseeds `random` per test, which would
# pick the same ports test after test.
_PORTS = random.SystemRandom()
# The ports handed out last: a test binds what it picked within seconds,
# and picks far fewer than this many ports in that time.
_RECENT: collections.deque[int] = collections.deque(maxlen=1000)


def free_port() -> int:
    """A loopback port nothing is bound to now."""
    first, end = _port_range()
    for _ in range(200):
        port = _PORTS.randrange(first, end)
        if port in _RECENT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _RECENT.append(port)
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_range() -> tuple[int, int]:
    """[first, end) of this process's picks: all of FIRST_TEST_PORT up to
    the ephemeral range, or this xdist worker's share of it (gw0 the first
    share of PYTEST_XDIST_WORKER_COUNT)."""
    end = _ephemeral_low()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    try:
        index, count = int(worker.removeprefix("gw")), int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    except (KeyError, ValueError):
        return FIRST_TEST_PORT, end
    if not 0 <= index < count:
        return FIRST_TEST_PORT, end
    share = (end - FIRST_TEST_PORT) // count
    first = FIRST_TEST_PORT + index * share
    return first, first + share


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, FIRST_TEST_PORT + 1000)


def free_ports(count: int, attempts: int = 50) -> int:
    """The first of ``count`` consecutive free loopback ports (a node with
    num.processes=count listens on port + index)."""
    end = _port_range()[1]
    for _ in range(attempts):
        base = free_port()
        if base + count > end:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                if port in _RECENT and port != base:
                    raise OSError(f"port {port} was handed out already")
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            _RECENT.extend(range(base + 1, base + count))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports in {attempts} attempts")

"""connections.max.idle.ms: connections without traffic for that long are
closed, as Kafka's Selector closes them, so clients that vanished without a
FIN (a dead host, a dropped NAT entry) do not hold descriptors and buffers
for ever. A negative value turns the sweep off, as in Kafka.

The sweep runs every tenth of the limit (at least every 30 s, at most every
100 ms): a connection is closed between 1 and 1.1 times the limit after
its last byte, where Kafka, checking on every poll, closes it at about 1x.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Protocol

log = logging.getLogger(__name__)


class Idle(Protocol):
    def idle_s(self, now: float) -> float: ...

    def close(self) -> None: ...


def sweep_interval_s(max_idle_ms: int) -> float | None:
    """How often to sweep, or None when idle connections are kept."""
    if max_idle_ms < 0:
        return None
    return min(30.0, max(0.1, max_idle_ms / 10_000))


def close_idle(connections: Iterable[Idle], max_idle_ms: int) -> int:
    """Close each connection idle for longer than the limit; how many."""
    now = time.monotonic()
    idle = [c for c in connections if c.idle_s(now) * 1000 > max_idle_ms]
    for connection in idle:
        connection.close()
    if idle:
        log.info("closed %d connections idle for more than %d ms", len(idle), max_idle_ms)
    return len(idle)

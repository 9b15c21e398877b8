"""The two clocks a broker reads, behind one seam a test can replace.

``time()`` is the wall clock (seconds since the epoch): it stamps what
Kafka writes down, record timestamps and the timestamps inside
__consumer_offsets and __transaction_state values, and whatever is compared
with them (retention by record time, offset expiry, segment.ms against a
batch's timestamp). An administrator or NTP may step it by any amount in
either direction.

``monotonic()`` (seconds from an arbitrary origin) only moves forward: every
deadline and every "how long since" lives on it (replica lag for the ISR,
fetch-session eviction, transaction timeouts), so a wall-clock step
shrinks no ISR, expires no group and aborts no transaction by itself. The
event loop's timers run on the same clock (asyncio: time.monotonic; uvloop:
libuv's CLOCK_MONOTONIC), so a loop timer is a monotonic deadline too.

Each service that reads time (replication, the group coordinator, the
transaction coordinator) takes one ``Clock`` and reads nothing else;
``SYSTEM_CLOCK`` is the host's, and tests pass one whose wall clock they
step (tests/support/clock.py).
"""
from __future__ import annotations

from time import monotonic as _host_monotonic
from time import time as _host_time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The host's clocks, with no Python frame between the caller and the
    C functions (replication reads the monotonic clock on every fetch)."""

    time = staticmethod(_host_time)
    monotonic = staticmethod(_host_monotonic)


SYSTEM_CLOCK: Clock = SystemClock()


def wall_ms(clock: Clock) -> int:
    """The wall clock in milliseconds, as Kafka's timestamps count."""
    return int(clock.time() * 1000)


def monotonic_ms(clock: Clock) -> int:
    """The monotonic clock in milliseconds."""
    return int(clock.monotonic() * 1000)

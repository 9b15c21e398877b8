"""Clocks a test moves (kcore.clock.Clock): a wall clock stepped by an
administrator or NTP, and time that passes only when the test says so."""
from __future__ import annotations

import time

HOUR_S = 3600.0


class SteppedClock:
    """The host's monotonic clock with a wall clock the test steps (the
    event loop's timers keep running on real time)."""

    def __init__(self) -> None:
        self.wall_offset_s = 0.0

    def time(self) -> float:
        return time.time() + self.wall_offset_s

    def monotonic(self) -> float:
        return time.monotonic()

    def step(self, seconds: float) -> None:
        self.wall_offset_s += seconds


class ManualClock:
    """Both clocks stand still until ``advance`` (time passes: both move)
    or ``step`` (the wall clock alone is set, forward or back)."""

    def __init__(self, wall_s: float = 1_700_000_000.0, monotonic_s: float = 5_000.0) -> None:
        self.wall_s = wall_s
        self.monotonic_s = monotonic_s

    def time(self) -> float:
        return self.wall_s

    def monotonic(self) -> float:
        return self.monotonic_s

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "time does not run backwards"
        self.wall_s += seconds
        self.monotonic_s += seconds

    def step(self, seconds: float) -> None:
        self.wall_s += seconds

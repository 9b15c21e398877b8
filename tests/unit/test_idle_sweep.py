"""The idle sweep's timing and choice (kcore/server/idle.py)."""
from __future__ import annotations

from kcore.server import idle


class Conn:
    def __init__(self, idle_s: float):
        self._idle_s, self.closed = idle_s, False

    def idle_s(self, now: float) -> float:
        return self._idle_s

    def close(self) -> None:
        self.closed = True


def test_a_negative_limit_turns_the_sweep_off():
    assert idle.sweep_interval_s(-1) is None


def test_the_sweep_runs_every_tenth_of_the_limit_within_bounds():
    assert idle.sweep_interval_s(600_000) == 30.0  # Kafka's default: every 30 s
    assert idle.sweep_interval_s(100_000) == 10.0
    assert idle.sweep_interval_s(0) == 0.1


def test_only_connections_past_the_limit_are_closed():
    old, fresh, waiting = Conn(2.5), Conn(0.5), Conn(0.0)
    assert idle.close_idle([old, fresh, waiting], 1000) == 1
    assert (old.closed, fresh.closed, waiting.closed) == (True, False, False)

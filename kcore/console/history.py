"""The console's live throughput charts: the broker's own counters
(BrokerStats, the numbers /metrics exports) sampled once a second, kept for
the last five minutes. Each group's lag history is the broker's consumer
lag service (kcore/coordinator/group/lag.py), sampled on the same timer.

Rates are differences of those counters, so the console and a Prometheus
scrape can never disagree. Memory is bounded: ``HISTORY_POINTS`` totals
and the last few per-topic snapshots.

Not thread-safe: ``sample()`` runs on the broker's event loop, from the
broker's timer, like everything it reads.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kcore.coordinator.group.lag import HISTORY_POINTS
from kcore.metrics import BrokerStats

# Per-topic rates are averaged over the last five seconds (six snapshots),
# smoothing the bursts of batched producers.
TOPIC_WINDOW = 6


@dataclass(frozen=True)
class Totals:
    at: float  # time.time()
    bytes_in: int
    bytes_out: int
    messages_in: int


Snapshot = dict[str, tuple[int, int, int]]  # topic -> (bytes_in, bytes_out, messages_in)


class ConsoleHistory:
    def __init__(self, stats: BrokerStats, clock: Callable[[], float] = time.time):
        self.stats = stats
        self.clock = clock
        self.totals: deque[Totals] = deque(maxlen=HISTORY_POINTS + 1)
        self.topics: deque[tuple[float, Snapshot]] = deque(maxlen=TOPIC_WINDOW)

    def sample(self) -> None:
        now = self.clock()
        snapshot = {topic: (c.bytes_in, c.bytes_out, c.messages_in)
                    for topic, c in self.stats.topics.topics.items()}
        self.topics.append((now, snapshot))
        self.totals.append(Totals(now, sum(v[0] for v in snapshot.values()),
                                  sum(v[1] for v in snapshot.values()),
                                  sum(v[2] for v in snapshot.values())))

    # -- reads -----------------------------------------------------------------------------
    def throughput(self) -> list[dict]:
        """Per-second rates between consecutive samples, oldest first, each
        with the seconds it covers (rate x seconds = the counter's change)."""
        points = list(self.totals)
        rates = []
        for before, after in zip(points, points[1:]):
            elapsed = max(after.at - before.at, 1e-3)
            rates.append({"at": round(after.at, 3), "seconds": elapsed,
                          "bytes_in": (after.bytes_in - before.bytes_in) / elapsed,
                          "bytes_out": (after.bytes_out - before.bytes_out) / elapsed,
                          "messages_in": (after.messages_in - before.messages_in) / elapsed})
        return rates

    def current_rates(self) -> dict[str, float]:
        rates = self.throughput()
        return rates[-1] if rates else {"bytes_in": 0.0, "bytes_out": 0.0, "messages_in": 0.0}

    def topic_rates(self, topic: str) -> dict[str, float]:
        """bytes in/out and messages in per second over the last samples."""
        if len(self.topics) < 2:
            return {"bytes_in": 0.0, "bytes_out": 0.0, "messages_in": 0.0}
        (start, first), (end, last) = self.topics[0], self.topics[-1]
        before, after = first.get(topic, (0, 0, 0)), last.get(topic, (0, 0, 0))
        elapsed = max(end - start, 1e-3)
        return {name: max(after[i] - before[i], 0) / elapsed
                for i, name in enumerate(("bytes_in", "bytes_out", "messages_in"))}

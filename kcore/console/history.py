"""The console's live charts: the broker's own counters (BrokerStats, the
numbers /metrics exports) sampled once a second, and each group's total
lag, kept for the last five minutes.

Rates are differences of those counters, so the console and a Prometheus
scrape can never disagree. Memory is bounded: 300 totals, the last few
per-topic snapshots, and lag for at most ``MAX_TRACKED_GROUPS`` groups.

Not thread-safe: ``sample()`` runs on the broker's event loop, from the
broker's timer, like everything it reads.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kcore.console.end_offsets import RemoteEndOffsets
from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.metrics import BrokerStats
from kcore.replication.replica_manager import ReplicaManager

SAMPLE_INTERVAL_S = 1.0
# Five minutes at one sample a second: what a glance at a console wants;
# 300 points also stay a light SVG path.
HISTORY_POINTS = 300
# Per-topic rates are averaged over the last five seconds (six snapshots),
# smoothing the bursts of batched producers.
TOPIC_WINDOW = 6
# Lag charts for this many groups at most (the first seen). A sample walks
# every topic's counters and these groups' committed offsets: 0.6 ms for
# 1000 topics and 10 groups of 100 partitions, measured here, once a second.
MAX_TRACKED_GROUPS = 200


@dataclass(frozen=True)
class Totals:
    at: float  # time.time()
    bytes_in: int
    bytes_out: int
    messages_in: int


Snapshot = dict[str, tuple[int, int, int]]  # topic -> (bytes_in, bytes_out, messages_in)


class ConsoleHistory:
    def __init__(self, stats: BrokerStats, replica_manager: ReplicaManager, groups: GroupCoordinator,
                 clock: Callable[[], float] = time.time, remote: RemoteEndOffsets | None = None):
        self.stats = stats
        # End offsets of partitions led elsewhere (a cluster, a node of
        # several processes), as last fetched from their leaders.
        self.remote = remote
        self.replica_manager = replica_manager
        self.groups = groups
        self.clock = clock
        self.totals: deque[Totals] = deque(maxlen=HISTORY_POINTS + 1)
        self.topics: deque[tuple[float, Snapshot]] = deque(maxlen=TOPIC_WINDOW)
        self.lag: dict[str, deque[tuple[float, int]]] = {}

    def sample(self) -> None:
        now = self.clock()
        snapshot = {topic: (c.bytes_in, c.bytes_out, c.messages_in)
                    for topic, c in self.stats.topics.topics.items()}
        self.topics.append((now, snapshot))
        self.totals.append(Totals(now, sum(v[0] for v in snapshot.values()),
                                  sum(v[1] for v in snapshot.values()),
                                  sum(v[2] for v in snapshot.values())))
        self._sample_lag(now)

    def _offsets_by_group(self) -> dict[str, dict]:
        """Committed offsets of every group here, classic and consumer protocol."""
        offsets = {group_id: group.offsets for group_id, group in self.groups.groups.items()}
        offsets.update((group_id, group.offsets) for group_id, group in self.groups.consumer_groups.items())
        return offsets

    def _sample_lag(self, now: float) -> None:
        groups = self._offsets_by_group()
        for group_id in [g for g in self.lag if g not in groups]:
            del self.lag[group_id]
        for group_id, committed in groups.items():
            series = self.lag.get(group_id)
            if series is None:
                if len(self.lag) >= MAX_TRACKED_GROUPS or not committed:
                    continue
                series = self.lag[group_id] = deque(maxlen=HISTORY_POINTS)
            series.append((now, self.group_lag(committed)))
        if self.remote is not None:
            self.remote.refresh_in_background(self._led_elsewhere())

    def _led_elsewhere(self) -> list[tuple[str, int]]:
        """The tracked groups' partitions that no replica here leads."""
        wanted = set()
        groups = self._offsets_by_group()
        for group_id in self.lag:
            for key in groups.get(group_id, {}):
                if not self._led_here(key):
                    wanted.add(key)
        return sorted(wanted)

    def _led_here(self, key: tuple[str, int]) -> bool:
        partition = self.replica_manager.get(*key)
        return partition is not None and partition.is_leader

    def end_offset(self, key: tuple[str, int]) -> int | None:
        """The high watermark here if this broker leads the partition, else
        the last one its leader gave (None: not known)."""
        partition = self.replica_manager.get(*key)
        if partition is not None and partition.is_leader:
            return partition.high_watermark
        return self.remote.cached(key) if self.remote is not None else None

    def group_lag(self, offsets) -> int:
        """High watermark minus committed offset, summed over the group's
        partitions whose end offset is known here (see end_offset)."""
        total = 0
        for key, value in offsets.items():
            end = self.end_offset(key)
            if end is not None:
                total += max(end - value.offset, 0)
        return total

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

    def lag_history(self, group_id: str) -> list[tuple[float, int]]:
        return [(round(at, 3), lag) for at, lag in self.lag.get(group_id, ())]

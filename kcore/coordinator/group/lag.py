"""Consumer lag of the groups this broker coordinates: a broker service
that /metrics (server/metrics.py, ``kafka_consumergroup_lag``) and the
console (console/groups.py) both read, so the two can never disagree.

A partition's lag is its high watermark minus the group's committed
offset. The high watermark is this broker's own where it leads the
partition, else the last one its leader gave (end_offsets.py); where
neither is known the lag is unknown and left out of a group's total.

``sample()`` runs once every ``SAMPLE_INTERVAL_S`` (the broker's timer,
while an HTTP listener serves /metrics or the console): it appends each
group's total lag to that group's history, the last ``HISTORY_POINTS``
samples of at most ``MAX_TRACKED_GROUPS`` groups, and renews the end
offsets of the tracked groups' partitions led elsewhere.

Not thread-safe: ``sample()`` runs on the broker's event loop, like
everything it reads.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.coordinator.group.end_offsets import RemoteEndOffsets
from kcore.coordinator.group.records import OffsetValue
from kcore.metadata import TopicPartition
from kcore.replication.replica_manager import ReplicaManager

SAMPLE_INTERVAL_S = 1.0
# Five minutes at one sample a second: what a glance at a console wants;
# 300 points also stay a light SVG path.
HISTORY_POINTS = 300
# Lag histories for this many groups at most (the first seen). A sample of
# these groups' committed offsets together with the console's topic counters
# (console/history.py) took 0.6 ms for 1000 topics and 10 groups of 100
# partitions, measured here, once a second.
MAX_TRACKED_GROUPS = 200


class ConsumerLag:
    def __init__(self, replica_manager: ReplicaManager, groups: GroupCoordinator,
                 remote: RemoteEndOffsets | None = None, clock: Callable[[], float] = time.time):
        self.replica_manager = replica_manager
        self.groups = groups
        # End offsets of partitions led elsewhere (a cluster, a node of
        # several processes), as last fetched from their leaders.
        self.remote = remote
        self.clock = clock
        self.history: dict[str, deque[tuple[float, int]]] = {}

    def sample(self) -> None:
        now = self.clock()
        groups = self._offsets_by_group()
        for group_id in [g for g in self.history if g not in groups]:
            del self.history[group_id]
        for group_id, committed in groups.items():
            series = self.history.get(group_id)
            if series is None:
                if len(self.history) >= MAX_TRACKED_GROUPS or not committed:
                    continue
                series = self.history[group_id] = deque(maxlen=HISTORY_POINTS)
            series.append((now, self.group_lag(committed)))
        if self.remote is not None:
            self.remote.refresh_in_background(self._led_elsewhere(groups))

    def _offsets_by_group(self) -> dict[str, Mapping[TopicPartition, OffsetValue]]:
        """Committed offsets of every group here, classic and consumer protocol."""
        offsets: dict[str, Mapping[TopicPartition, OffsetValue]] = {
            group_id: group.offsets for group_id, group in self.groups.groups.items()}
        offsets.update((group_id, group.offsets) for group_id, group in self.groups.consumer_groups.items())
        return offsets

    def _led_elsewhere(self, groups: Mapping[str, Mapping[TopicPartition, OffsetValue]]
                       ) -> list[TopicPartition]:
        """The tracked groups' partitions that no replica here leads."""
        wanted = set()
        for group_id in self.history:
            for key in groups.get(group_id, {}):
                if not self._led_here(key):
                    wanted.add(key)
        return sorted(wanted)

    def _led_here(self, key: TopicPartition) -> bool:
        partition = self.replica_manager.get(*key)
        return partition is not None and partition.is_leader

    async def fetch_end_offsets(self, partitions: Iterable[TopicPartition]) -> None:
        """Ask the leaders of these partitions for their end offsets now
        (a page that shows them), rather than at the next sample."""
        if self.remote is not None:
            await self.remote.fetch(partitions)

    def end_offset(self, key: TopicPartition) -> int | None:
        """The high watermark here if this broker leads the partition, else
        the last one its leader gave (None: not known)."""
        partition = self.replica_manager.get(*key)
        if partition is not None and partition.is_leader:
            return partition.high_watermark
        return self.remote.cached(key) if self.remote is not None else None

    def group_lag(self, offsets: Mapping[TopicPartition, OffsetValue]) -> int:
        """High watermark minus committed offset, summed over the group's
        partitions whose end offset is known here (see end_offset)."""
        total = 0
        for key, value in offsets.items():
            end = self.end_offset(key)
            if end is not None:
                total += max(end - value.offset, 0)
        return total

    def lag_history(self, group_id: str) -> list[tuple[float, int]]:
        return [(round(at, 3), lag) for at, lag in self.history.get(group_id, ())]

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()

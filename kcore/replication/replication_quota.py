"""Replication throttles: Kafka's ReplicationQuotaManager, one per side.

A leader sends at most ``leader.replication.throttled.rate`` bytes/s of
the partitions its topics list in ``leader.replication.throttled.replicas``
for this broker; a follower fetches at most
``follower.replication.throttled.rate`` bytes/s of those listed in
``follower.replication.throttled.replicas`` for it. A list is ``*`` (every
partition) or ``partition:broker`` pairs; a pair throttles the partition on
the broker it names (Kafka's ``parseThrottledPartitions``). Only replicas
out of the ISR are held back (Kafka's ``shouldLeaderThrottle`` /
``shouldFollowerThrottle``): a reassignment's new replica is, the followers
that keep acks=all going are not.

The bytes of every throttled partition are recorded in a rate measured
like the client quotas' (security/quotas.py: 1 s samples, the last 11, the
window counted from the first sample, not Kafka's padded 10 s, which would
let a fresh throttle pass 10 s of quota at once). While the rate is above
the quota a throttled partition is left out: the leader answers it empty
(no error), the follower does not ask for it.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kcore.protocol.constants import INT64_MAX
from kcore.security.quotas import Rate

ALL_PARTITIONS = "*"
MIN_BOUND = 1e-9  # bytes/s standing in for a bound of 0

TopicConfigs = Callable[[str], "dict[str, str] | None"]


def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | str:
    """The partitions a throttled-replicas list names for ``broker_id``,
    or ALL_PARTITIONS."""
    value = value.strip()
    if value == ALL_PARTITIONS:
        return ALL_PARTITIONS
    found = set()
    for item in value.split(","):
        partition, _, broker = item.strip().partition(":")
        if partition.isdigit() and broker.strip().isdigit() and int(broker) == broker_id:
            found.add(int(partition))
    return frozenset(found)


class ReplicationQuota:
    """One side's quota (``config_key`` names its throttled-replicas list)."""

    def __init__(self, broker_id: int, config_key: str, topic_configs: TopicConfigs):
        self.broker_id = broker_id
        self.config_key = config_key
        self.topic_configs = topic_configs
        self.bound = INT64_MAX  # bytes/s; INT64_MAX is Kafka's "no throttle"
        self._rate = Rate()
        self._parsed: dict[str, Any] = {}  # list text -> partitions (topic lists repeat)
        self.total_bytes = 0

    @property
    def active(self) -> bool:
        return self.bound < INT64_MAX

    def update_bound(self, bytes_per_s: int) -> None:
        self.bound = bytes_per_s

    def is_throttled(self, topic: str, partition: int) -> bool:
        if not self.active:
            return False
        configs = self.topic_configs(topic)
        value = configs.get(self.config_key) if configs else None
        if not value:
            return False
        partitions = self._parsed.get(value)
        if partitions is None:
            if len(self._parsed) > 1000:  # one entry per distinct list: bounded anyway
                self._parsed.clear()
            partitions = self._parsed[value] = throttled_partitions(value, self.broker_id)
        return partitions == ALL_PARTITIONS or partition in partitions

    def exceeded(self, now: float | None = None) -> bool:
        if not self.active:
            return False
        now = time.monotonic() if now is None else now
        # A bound of 0 (allowed, as in Kafka) lets the first answer through
        # and nothing after it while the recorded bytes are in the window;
        # the tiny floor keeps the rate's division defined.
        return self._rate.throttle_ms(max(float(self.bound), MIN_BOUND), now) > 0

    def record(self, size: int, now: float | None = None) -> None:
        if size <= 0:
            return
        self.total_bytes += size
        self._rate.record(size, time.monotonic() if now is None else now)

"""Incremental fetch sessions (KIP-227): what a fetcher fetches, kept here so
its requests and our answers name only what changed.

Request (Fetch v7+) ``session_id``, ``session_epoch``:

| session_id | epoch | meaning                                                  |
|------------|-------|----------------------------------------------------------|
| 0          | -1    | a full fetch without a session (librdkafka, aiokafka)    |
| any        | 0     | a full fetch: close that session, open a new one         |
| n          | -1    | close session n; a full fetch without a session          |
| n          | > 0   | incremental: the partitions listed are added or updated, |
|            |       | ``forgotten_topics_data`` removed, the rest as cached    |

The epoch of an incremental request must be the session's (1 after the
full fetch that opened it, then +1 per request, wrapping to 1), else
INVALID_FETCH_SESSION_EPOCH; an unknown id gets FETCH_SESSION_ID_NOT_FOUND.
An incremental answer holds a partition only when it has records, an
error, or a high watermark, last stable offset or log start offset that
differs from the one last sent (Kafka ``CachedPartition``); partitions that
answered move to the end of the session, so a fetch capped by max_bytes
reaches the others next time.

What is read: Kafka reads every partition of a session on every fetch.
Here a session reads only its *pending* partitions: those the request
named, those with data the fetcher has not caught up with or an error, and
those the partition itself reported news for (``partition_changed``: the
high watermark moved, or for a follower the log grew). A caught-up
partition costs nothing until it changes, so a consumer of 1,000 idle
partitions is answered without looking at them. A follower's session also
tells the leader, every ``follower_touch_interval_ms``, that it is still
caught up on its idle partitions (what a read would have told it), so
their ISR holds.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions
(Kafka's default 1,000). When full, a new session may evict (Kafka
``FetchSessionCache.tryEvict``) one unused for ``EVICTION_MS``; else the
least valuable of those it may evict: a follower's session (privileged)
may evict any consumer's, and any session one older than ``EVICTION_MS``,
when the victim is worth less: not privileged when the newcomer is, or
fewer partitions. Session times are the monotonic clock's (``now_ms``): a
step of the wall clock neither evicts sessions nor stops a follower's
session from touching its idle partitions (which would drop it from their
ISRs).

Not thread-safe: the broker's event loop owns it; methods do not await
except ``FetchSession.wait``.
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable
from dataclasses import dataclass

from kcore.clock import SYSTEM_CLOCK, Clock, monotonic_ms
from kcore.metadata import TopicPartition
from kcore.protocol.constants import INITIAL_EPOCH, INT32_MAX
from kcore.replication.partition import Partition

FINAL_EPOCH = -1
# Kafka: a session unused this long may be evicted by anyone, and a session
# younger than this only by a privileged one (FetchSessionCache(..., 120000)).
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Kafka FetchMetadata.nextEpoch)."""
    return 1 if epoch >= INT32_MAX or epoch < INITIAL_EPOCH else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: what the fetcher asked for last, and
    what it was last told."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    fetcher_log_start_offset: int = -1
    high_watermark: int = -1       # -1: never told (or told an error): answer next time
    last_stable_offset: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1   # Fetch v12+: the fetcher's, checked for divergence

    def must_respond(self, error_code: int, has_records: bool, high_watermark: int,
                     last_stable_offset: int, log_start_offset: int, urgent: bool = False) -> bool:
        """Whether an incremental answer includes this partition; remembers
        what it is told. ``urgent``: a diverging epoch or a preferred read
        replica, which always answer (Kafka's CachedPartition)."""
        if error_code:
            self.high_watermark = -1  # so the partition answers again once the error is gone
            return True
        changed = (high_watermark, last_stable_offset, log_start_offset) != (
            self.high_watermark, self.last_stable_offset, self.log_start_offset)
        self.high_watermark, self.last_stable_offset = high_watermark, last_stable_offset
        self.log_start_offset = log_start_offset
        return has_records or changed or urgent


class FetchSession:
    """The partitions one fetcher fetches, in answer order."""

    def __init__(self, session_id: int, replica_id: int, now_ms: int):
        self.id = session_id
        self.replica_id = replica_id
        self.privileged = replica_id >= 0
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.created_ms = self.last_used_ms = self.touched_ms = now_ms
        self.partitions: dict[TopicPartition, CachedPartition] = {}
        self.pending: dict[TopicPartition, None] = {}  # ordered: read next time
        self._waiter: asyncio.Future | None = None

    def __len__(self) -> int:
        return len(self.partitions)

    def update(self, requested: dict[TopicPartition, CachedPartition],
               forgotten: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Apply an incremental request; returns the partitions it removed."""
        for key, wanted in requested.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = wanted
            else:
                cached.fetch_offset, cached.max_bytes = wanted.fetch_offset, wanted.max_bytes
                cached.current_leader_epoch = wanted.current_leader_epoch
                cached.fetcher_log_start_offset = wanted.fetcher_log_start_offset
                cached.last_fetched_epoch = wanted.last_fetched_epoch
            self.pending[key] = None
        removed = [key for key in forgotten if self.partitions.pop(key, None) is not None]
        for key in removed:
            self.pending.pop(key, None)
        return removed

    def answered(self, key: TopicPartition) -> None:
        """``key`` answered: it goes to the back of the session."""
        self.partitions[key] = self.partitions.pop(key)

    def settle(self, key: TopicPartition, keep_pending: bool) -> None:
        """After a read: a caught-up partition waits for news; one with
        data left or an error is read again next time (at the back)."""
        self.pending.pop(key, None)
        if keep_pending:
            self.pending[key] = None

    def mark_pending(self, key: TopicPartition) -> None:
        self.pending[key] = None
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        """Until a partition reports news, or ``timeout_s``."""
        if timeout_s <= 0:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(asyncio.shield(self._waiter), timeout_s)
        except TimeoutError:
            pass


class FetchSessionCache:
    """Sessions by id (see the module docstring)."""

    def __init__(self, max_slots: int = 1000, follower_touch_interval_ms: int = 3750,
                 clock: Clock = SYSTEM_CLOCK):
        self.max_slots = max_slots
        self.clock = clock
        self.follower_touch_interval_ms = follower_touch_interval_ms
        self.sessions: dict[int, FetchSession] = {}
        self._watchers: dict[TopicPartition, set[FetchSession]] = {}
        self.evictions = 0

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def now_ms(self) -> int:
        """The time sessions are stamped with: the monotonic clock, in ms."""
        return monotonic_ms(self.clock)

    def create(self, replica_id: int, partitions: dict[TopicPartition, CachedPartition],
               now_ms: int) -> FetchSession | None:
        """A new session holding ``partitions``, or None when the cache is
        full and nothing may be evicted for it (the fetch stays
        sessionless)."""
        privileged = replica_id >= 0
        if self.max_slots <= 0 or (len(self.sessions) >= self.max_slots
                                   and not self._evict_for(privileged, len(partitions), now_ms)):
            return None
        session_id = random.randint(1, INT32_MAX)
        while session_id in self.sessions:
            session_id = random.randint(1, INT32_MAX)
        session = FetchSession(session_id, replica_id, now_ms)
        self.sessions[session_id] = session
        self.add_partitions(session, partitions)
        return session

    def add_partitions(self, session: FetchSession,
                       partitions: dict[TopicPartition, CachedPartition]) -> None:
        """Cache ``partitions`` in ``session`` (a full or incremental
        request) and watch them."""
        removed = session.update(partitions, ())
        assert not removed
        for key in partitions:
            self._watchers.setdefault(key, set()).add(session)

    def forget(self, session: FetchSession, keys: Iterable[TopicPartition]) -> None:
        for key in session.update({}, keys):
            self._unwatch(session, key)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            for key in session.partitions:
                self._unwatch(session, key)
        return session

    def _unwatch(self, session: FetchSession, key: TopicPartition) -> None:
        watching = self._watchers.get(key)
        if watching is not None:
            watching.discard(session)
            if not watching:
                del self._watchers[key]

    def partition_changed(self, partition: Partition, log_grew: bool) -> None:
        """``partition``'s high watermark or role changed, or (``log_grew``)
        its log: the sessions that may care read it next time. Consumers
        see only the high watermark move; followers copy the log."""
        watching = self._watchers.get(partition.topic_partition)
        if watching:
            key = partition.topic_partition
            for session in watching:
                if session.privileged or not log_grew:
                    session.mark_pending(key)

    def _evict_for(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's tryEvict: a stale session, else the least valuable one
        this newcomer may evict, if it is worth no more than the newcomer."""
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > EVICTION_MS:
            self._evict(stale)
            return True
        candidates = [s for s in self.sessions.values()
                      if now_ms - s.created_ms > EVICTION_MS or (privileged and not s.privileged)]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, len(s), s.id))
        if (privileged, size) <= (victim.privileged, len(victim)):
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

"""What a partition leader knows of its followers, and who waits on its
high watermark.

``FollowerState`` follows Kafka's ``Replica``: the follower's log end
offset is the offset of its last fetch (a follower asks for the offset it
lacks, so everything before it is in its log), and ``last_caught_up_ms`` is
the last time (the leader's monotonic clock, ms: kcore/clock.py) it had
everything the leader had: the time of a fetch that
reached the leader's log end offset, or of the previous fetch when this
one reached the log end offset the leader had then (Kafka's rule, so a
follower that keeps up with a busy leader is never "behind" by the batch
appended between two of its fetches). ISR membership is judged on it.
``log_start_offset`` is the one its last fetch reported (Fetch v5+): the
leader's low watermark, the smallest log start offset over the live
replicas, says when a DeleteRecords is replicated.

``HighWatermarkWaiters`` is the produce purgatory of one partition: an
acks=all produce waits there until the high watermark passes its last
offset, leadership moves (NOT_LEADER_OR_FOLLOWER) or its timeout ends.
The DeleteRecords purgatory is another instance, keyed on the low
watermark (Kafka's DelayedDeleteRecords).

Not thread-safe; owned by the partition's event loop.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kcore.protocol.errors import ErrorCode

UNKNOWN_OFFSET = -1


@dataclass
class FollowerState:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    log_start_offset: int = UNKNOWN_OFFSET
    # The leader's log end offset and the time at this follower's last fetch.
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0

    def update_fetch(self, fetch_offset: int, leader_log_end_offset: int, now_ms: int,
                     log_start_offset: int = UNKNOWN_OFFSET) -> None:
        if log_start_offset >= 0:  # -1: a fetch version without it, or nothing reported
            self.log_start_offset = log_start_offset
        if fetch_offset >= leader_log_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_log_end_offset
        self.last_fetch_ms = now_ms

    def reset(self, now_ms: int, in_sync: bool) -> None:
        """A new leadership: the offset is unknown until the next fetch; an
        ISR member counts as caught up now, so it is not dropped before it
        could fetch."""
        self.log_end_offset = self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
        self.last_fetch_ms = 0
        self.last_caught_up_ms = now_ms if in_sync else 0


def low_watermark(log_start_offset: int, followers: Iterable[FollowerState],
                  is_live_broker: Callable[[int], bool]) -> int:
    """The smallest log start offset over the leader (``log_start_offset``)
    and its followers on live brokers (Kafka ``lowWatermarkIfLeader``); a
    follower that has not fetched since the leadership began counts as -1."""
    low = log_start_offset
    for follower in followers:
        if follower.log_start_offset < low and is_live_broker(follower.broker_id):
            low = follower.log_start_offset
    return low


class HighWatermarkWaiters:
    """Futures resolved with an error code once the high watermark reaches
    their offset (see module doc)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, required_offset: int) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (required_offset, next(self._order), future))
        return future

    def complete_up_to(self, high_watermark: int, error_code: int) -> None:
        """Resolve every waiter whose offset the high watermark reached."""
        heap = self._heap
        while heap and heap[0][0] <= high_watermark:
            future = heapq.heappop(heap)[2]
            if not future.done():
                future.set_result(error_code)

    def fail_all(self, error_code: int = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        heap, self._heap = self._heap, []
        for _, _, future in heap:
            if not future.done():
                future.set_result(error_code)

    def prune(self) -> None:
        """Drop waiters whose produce gave up (timed out, connection closed)."""
        if len(self._heap) > 64:
            self._heap = [entry for entry in self._heap if not entry[2].done()]
            heapq.heapify(self._heap)

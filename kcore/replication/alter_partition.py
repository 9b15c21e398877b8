"""ISR changes proposed by this broker's leaders, sent to the controller.

Leaders propose (``Partition.maybe_shrink_isr``, a follower catching up);
this manager gathers the proposals of one event-loop turn into one
AlterPartition request (KIP-497), keeps one request in flight, and hands
each partition the controller's answer (``Partition.on_isr_change``). A
request that fails as a whole answers every partition in it with that
error, which clears the partition's pending change so it proposes again
at its next check. Accepted changes are counted as Kafka's IsrShrinksPerSec
and IsrExpandsPerSec count them: when the controller's answer is applied.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kcore.controller.base import IsrChange
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition

log = logging.getLogger(__name__)

Send = Callable[[Sequence[IsrChange]], Awaitable[tuple[int, dict[TopicPartition, tuple[int, Any]]]]]


class AlterPartitionManager:
    def __init__(self, send: Send):
        self._send = send
        self._pending: dict[TopicPartition, tuple[Partition, list[int]]] = {}
        self._in_flight = False
        self.isr_shrinks = 0
        self.isr_expands = 0

    def submit(self, partition: Partition, new_isr: list[int]) -> None:
        self._pending[partition.topic_partition] = (partition, new_isr)
        if not self._in_flight:
            self._in_flight = True
            asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, {}
                await self._send_batch(batch)
        finally:
            self._in_flight = False

    async def _send_batch(self, batch: dict[TopicPartition, tuple[Partition, list[int]]]) -> None:
        items = [(key, partition.leader_epoch, new_isr, partition.partition_epoch)
                 for key, (partition, new_isr) in batch.items()]
        try:
            error, results = await self._send(items)
        except Exception as exc:  # no controller reachable within the deadline
            log.warning("AlterPartition for %d partitions failed: %s", len(items), exc)
            error, results = ErrorCode.REQUEST_TIMED_OUT, {}
        for key, (partition, _) in batch.items():
            if error != ErrorCode.NONE or key not in results:
                partition.on_isr_change(error or ErrorCode.UNKNOWN_SERVER_ERROR, -1, (), -1)
                continue
            code, answer = results[key]
            if code != ErrorCode.NONE:
                partition.on_isr_change(code, -1, (), -1)
            else:
                before = len(partition.isr)
                partition.on_isr_change(code, answer.leader_epoch, list(answer.isr),
                                        answer.partition_epoch)
                self._count_change(before, len(partition.isr))

    def _count_change(self, before: int, after: int) -> None:
        if after < before:
            self.isr_shrinks += 1
        elif after > before:
            self.isr_expands += 1

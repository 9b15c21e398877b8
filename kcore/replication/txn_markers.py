"""Transaction markers on the partitions this broker leads: the leader's
side of WriteTxnMarkers, for the network handler and for this broker's
own transaction coordinator alike.

Each partition gets one control batch (Partition.append_txn_marker), and
the answer waits, as an acks=all produce does, for the group-commit fsync
(flush.messages=1) and for the ISR, up to ``MARKER_TIMEOUT_S``. Once a
marker is on the ISR, ``completion_listeners`` hear of it: the group
coordinator settles the transaction's offsets in ``__consumer_offsets``.

Not thread-safe: the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kcore.log.durability import GroupCommitSyncer
from kcore.log.errors import LogError
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import LogAppendResult, Partition, PartitionError

if TYPE_CHECKING:
    from kcore.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

# Kafka appends markers with the broker's request.timeout.ms (30 s).
MARKER_TIMEOUT_S = 30.0
# (topic, partition, producer id, commit) once a marker is on the ISR.
CompletionListener = Callable[[str, int, int, bool], None]


class TxnMarkerWriter:
    def __init__(self, replica_manager: ReplicaManager):
        self.replica_manager = replica_manager
        self.syncer: GroupCommitSyncer | None = None
        self.completion_listeners: list[CompletionListener] = []

    async def write_txn_markers(self, producer_id: int, producer_epoch: int,
                                coordinator_epoch: int, commit: bool,
                                partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Kafka's error code per partition (NONE once the marker is on the ISR)."""
        errors: dict[TopicPartition, int] = {}
        waiting: list[tuple[TopicPartition, Partition, LogAppendResult]] = []
        for key in partitions:
            partition = self.replica_manager.get(*key)
            if partition is None:
                errors[key] = self.replica_manager.partition_error(*key)
                continue
            try:
                result = partition.append_txn_marker(producer_id, producer_epoch,
                                                     coordinator_epoch, commit, self.syncer)
            except PartitionError as exc:
                log.info("%s-%d: marker of producer %d refused: %s", key[0], key[1], producer_id,
                         exc.message)
                errors[key] = exc.error_code
                continue
            waiting.append((key, partition, result))
        if waiting:
            codes = await asyncio.gather(*(_replicated(partition, result)
                                           for _, partition, result in waiting))
            for (key, _, _), code in zip(waiting, codes, strict=True):
                errors[key] = code
                if code == ErrorCode.NONE:
                    self._completed(key, producer_id, commit)
        return errors

    def _completed(self, key: TopicPartition, producer_id: int, commit: bool) -> None:
        for listener in self.completion_listeners:
            try:
                listener(key[0], key[1], producer_id, commit)
            except Exception:
                log.exception("%s-%d: transaction completion listener failed", *key)


async def _replicated(partition: Partition, result: LogAppendResult) -> int:
    if result.durable is not None:
        try:
            await result.durable
        except LogError as exc:
            return exc.error_code
    replicated = partition.wait_for_replicas(result.required_offset)
    if replicated is None:
        return partition.acks_all_error()
    try:
        return await asyncio.wait_for(replicated, MARKER_TIMEOUT_S)
    except TimeoutError:
        return ErrorCode.REQUEST_TIMED_OUT

"""DeleteRecords on the partitions this broker leads: Kafka's
``ReplicaManager.deleteRecords``, ``Partition.deleteRecordsOnLeader`` and
``DelayedDeleteRecords``.

Per partition, in Kafka's order: an internal topic is refused
(INVALID_TOPIC_EXCEPTION), a partition this broker does not host answers
NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION when no broker does),
a follower NOT_LEADER_OR_FOLLOWER, a topic whose cleanup.policy lacks
delete POLICY_VIOLATION; the offset -1 means the high watermark, and an
offset below 0 or above the high watermark is OFFSET_OUT_OF_RANGE. An
offset at or below the log start offset changes nothing and succeeds.

The leader moves its log start offset at once (reads below it fail with
OFFSET_OUT_OF_RANGE from then on) and deletes the segments wholly below
it; the answer waits, up to the request's timeout, until the low
watermark (the smallest log start offset over the live replicas, which
followers report in their fetches) reaches the new start: NONE with the
low watermark then, REQUEST_TIMED_OUT with the low watermark of the
moment the deletion began if it does not, NOT_LEADER_OR_FOLLOWER if the
leadership moves meanwhile. The start offset stays moved in every case.

Not safe across await but for the wait itself; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import NamedTuple

from kcore.metadata import INTERNAL_TOPICS, TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager

HIGH_WATERMARK = -1         # the request's offset meaning "up to the high watermark"
INVALID_LOW_WATERMARK = -1  # the answer's low watermark with an error


class DeleteRecordsResult(NamedTuple):
    error_code: int
    low_watermark: int = INVALID_LOW_WATERMARK


def delete_on_leader(replica_manager: ReplicaManager, topic: str, index: int,
                     offset: int) -> tuple[DeleteRecordsResult, Partition | None, int]:
    """Move one partition's log start offset: (result, the partition, the
    offset its low watermark must reach) with the partition None on error."""
    if topic in INTERNAL_TOPICS:
        return DeleteRecordsResult(ErrorCode.INVALID_TOPIC_EXCEPTION), None, -1
    partition = replica_manager.get(topic, index)
    if partition is None:
        known = replica_manager.metadata_cache.partition(topic, index) is not None
        return DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER if known
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None, -1
    if not partition.is_leader:
        return DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER), None, -1
    if not partition.log.config.delete:
        return DeleteRecordsResult(ErrorCode.POLICY_VIOLATION), None, -1
    requested = partition.high_watermark if offset == HIGH_WATERMARK else offset
    if not 0 <= requested <= partition.high_watermark:
        return DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE), None, -1
    partition.delete_records(requested)
    return DeleteRecordsResult(ErrorCode.NONE, partition.low_watermark), partition, requested


async def delete_records(replica_manager: ReplicaManager, offsets: Mapping[TopicPartition, int],
                         timeout_s: float) -> dict[TopicPartition, DeleteRecordsResult]:
    """Delete below each partition's offset, then wait (all partitions
    sharing ``timeout_s``) until each low watermark reaches its offset."""
    results: dict[TopicPartition, DeleteRecordsResult] = {}
    waits: list[tuple[TopicPartition, Partition, asyncio.Future]] = []
    for key, offset in offsets.items():
        result, partition, requested = delete_on_leader(replica_manager, *key, offset)
        results[key] = result
        if partition is None:
            continue
        future = partition.wait_for_low_watermark(requested)
        if future is None:  # replicated already (a single replica: always)
            results[key] = _settled(partition, ErrorCode.NONE)
        else:
            waits.append((key, partition, future))
    # The leader's new start offsets on disk before any answer leaves.
    replica_manager.log_manager.write_stale_checkpoints()
    if waits:
        done, _ = await asyncio.wait([future for _, _, future in waits], timeout=max(timeout_s, 0))
        for key, partition, future in waits:
            if future in done:
                results[key] = _settled(partition, future.result())
            else:
                future.cancel()
                results[key] = results[key]._replace(error_code=ErrorCode.REQUEST_TIMED_OUT)
    return results


def _settled(partition: Partition, error_code: int) -> DeleteRecordsResult:
    if error_code != ErrorCode.NONE or not partition.is_leader:
        return DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER
                                   if error_code == ErrorCode.NONE else error_code)
    return DeleteRecordsResult(ErrorCode.NONE, partition.low_watermark)

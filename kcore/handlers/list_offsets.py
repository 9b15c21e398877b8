"""ListOffsets (key 2): an offset by timestamp, or by a special timestamp.

As Kafka answers (ReplicaManager.fetchOffset, Partition and UnifiedLog
fetchOffsetForTimestamp), for a log without tiered storage:

| timestamp | from v | offset | leader_epoch |
|---|---|---|---|
| -1 latest | 1 | the high watermark (the last stable offset under read_committed) | the leader's |
| -2 earliest, -4 earliest local | 1, 8 | the log start offset | the first cached epoch, if it starts there |
| -3 max timestamp (KIP-734) | 7 | the first record with the largest timestamp | its batch's |
| -5 latest tiered, -6 earliest pending upload | 9, 11 | -1 (nothing is tiered) | -1 |
| >= 0 | 1 | the first record at or after it | its batch's |

A special timestamp the request's version does not know, or any other
negative one, gets UNSUPPORTED_VERSION for that partition; a partition
named twice gets INVALID_REQUEST each time. A consumer (replica_id -1)
sees nothing at or past the high watermark (last stable offset): a record
found there answers no offset. Only the leader answers a consumer
(NOT_LEADER_OR_FOLLOWER elsewhere); the debugging replica id -2 may ask
any replica and, like a broker's id, reads up to the log end. A leader
elected so recently that its high watermark is still below what it held
when elected answers a consumer's latest, or a found offset at or past
the high watermark, with OFFSET_NOT_AVAILABLE (KIP-207; LEADER_NOT_AVAILABLE
before v5), so nobody sees the latest offset go backwards across a leader
change. v10's timeout_ms bounds a lookup in tiered storage: nothing to
wait for here.
"""
from __future__ import annotations

from collections import Counter

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.constants import (
    CONSUMER_REPLICA_ID,
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    READ_COMMITTED,
)
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition
from kcore.security.acl import AclOperation

# The first version that may ask each special timestamp (Kafka's
# ReplicaManager.timestampMinSupportedVersion).
TIMESTAMP_MIN_VERSION = {
    LATEST_TIMESTAMP: 1, EARLIEST_TIMESTAMP: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9, EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}
DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID: any replica answers
# v5 added OFFSET_NOT_AVAILABLE; older versions get LEADER_NOT_AVAILABLE instead.
OFFSET_NOT_AVAILABLE_VERSION = 5
_NOTHING = (-1, -1, -1)  # (timestamp, offset, leader_epoch): no offset found


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    read_committed = version >= 2 and body.isolation_level == READ_COMMITTED
    named = Counter((topic.name, item.partition_index) for topic in body.topics
                    for item in topic.partitions)
    topics = []
    for topic in body.topics:
        allowed = topic_allowed(broker, context, AclOperation.DESCRIBE, topic.name)
        results = []
        for item in topic.partitions:
            if not allowed:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif named[(topic.name, item.partition_index)] > 1:
                code = ErrorCode.INVALID_REQUEST
            elif item.timestamp < 0 and version < TIMESTAMP_MIN_VERSION.get(item.timestamp, 1 << 15):
                code = ErrorCode.UNSUPPORTED_VERSION
            else:
                results.append(_lookup(broker, topic.name, item, body.replica_id, read_committed,
                                       version))
                continue
            results.append(_answer(item.partition_index, code))
        topics.append({"name": topic.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _answer(index: int, code: int, found: tuple[int, int, int] = _NOTHING) -> dict:
    timestamp, offset, leader_epoch = found
    return {"partition_index": index, "error_code": code, "timestamp": timestamp,
            "offset": offset, "leader_epoch": leader_epoch}


def _lookup(broker: BrokerFacade, topic: str, item, replica_id: int, read_committed: bool,
            version: int) -> dict:
    index = item.partition_index
    partition = broker.replica_manager.get(topic, index)
    code = replica_error(broker, topic, index, partition, item.current_leader_epoch,
                         leader_only=replica_id != DEBUGGING_REPLICA_ID)
    if code != ErrorCode.NONE or partition is None:
        return _answer(index, code)
    client = replica_id == CONSUMER_REPLICA_ID
    if not client:
        fetchable = partition.log_end_offset
    else:
        fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
    # KIP-207: a new leader's high watermark still below where its epoch began.
    lagging = client and partition.high_watermark_behind_epoch_start
    unavailable = (ErrorCode.OFFSET_NOT_AVAILABLE if version >= OFFSET_NOT_AVAILABLE_VERSION
                   else ErrorCode.LEADER_NOT_AVAILABLE)
    timestamp = item.timestamp
    if timestamp == LATEST_TIMESTAMP:
        if lagging:
            return _answer(index, unavailable)
        return _answer(index, ErrorCode.NONE, (-1, fetchable, partition.leader_epoch))
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return _answer(index, ErrorCode.NONE, (-1, partition.log_start_offset,
                                               _earliest_epoch(partition)))
    if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        return _answer(index, ErrorCode.NONE)
    found = _search(partition, timestamp)
    if found is None or found[1] >= fetchable:
        return _answer(index, unavailable if lagging else ErrorCode.NONE)
    return _answer(index, ErrorCode.NONE, found)


def _search(partition: Partition, timestamp: int) -> tuple[int, int, int] | None:
    """(timestamp, offset, leader epoch) of the record MAX_TIMESTAMP or a
    timestamp finds in the log, or None."""
    log = partition.log
    found = log.offset_of_max_timestamp() if timestamp == MAX_TIMESTAMP \
        else log.offset_for_timestamp(timestamp)
    if found is None:
        return None
    offset, found_timestamp = found
    epoch = log.leader_epoch_cache.epoch_for_offset(offset)
    return found_timestamp, offset, -1 if epoch is None else epoch


def _earliest_epoch(partition: Partition) -> int:
    """The first cached epoch when it starts at or before the log start
    offset (it may not, after a message format change), else -1."""
    entries = partition.log.leader_epoch_cache.entries
    if entries and entries[0][1] <= partition.log_start_offset:
        return entries[0][0]
    return -1


def replica_error(broker: BrokerFacade, topic: str, index: int, partition: Partition | None,
                  current_leader_epoch: int, leader_only: bool = True) -> int:
    """What a request for ``topic``-``index`` gets here: NONE when this
    broker leads it (or, unless ``leader_only``, hosts a replica of it) at
    the epoch the client knows."""
    if partition is None:
        return broker.replica_manager.partition_error(topic, index)
    code = partition.check_leader_epoch(current_leader_epoch)
    if code == ErrorCode.NONE and leader_only and not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return code


def leader_error(broker: BrokerFacade, topic: str, index: int, partition: Partition | None,
                 current_leader_epoch: int) -> int:
    """What a request for the leader of ``topic``-``index`` gets here:
    NONE when this broker leads it at the epoch the client knows."""
    return replica_error(broker, topic, index, partition, current_leader_epoch)

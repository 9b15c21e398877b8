"""OffsetCommit (key 8): store a group's consumed offsets with their metadata.

Partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION without
reaching the coordinator (Kafka checks its metadata cache the same way).
v2-4 carry retention_time_ms: -1 means offsets.retention.minutes, anything
else fixes an expire timestamp (stored as offset value version 1). v6 adds
the leader epoch, v7 group_instance_id, v8 is flexible, v9 carries a
consumer-protocol member's epoch (KIP-848). Answered after the records are in
`__consumer_offsets` and its in-sync replicas (acks=all, up to 5 s, Kafka's
offsets.commit.timeout.ms); with flush.messages=1 there, after the group-commit
fsync covering them (a failed one answers NOT_COORDINATOR, as Kafka maps a
storage error of the offsets topic).
"""
from __future__ import annotations

import asyncio
import logging

from kcore.clock import wall_ms
from kcore.coordinator.group.offsets import sync_error_code
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.internal_log import StoreError
from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.log.errors import LogError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

log = logging.getLogger(__name__)

DEFAULT_RETENTION = -1
FIRST_LEADER_EPOCH_VERSION = 6
FIRST_STATIC_VERSION = 7


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    await broker.group_coordinator.manager.maybe_create_topic()
    version = request.api_version
    now = wall_ms(broker.group_coordinator.manager.clock)  # written with each offset
    retention = body.retention_time_ms if 2 <= version <= 4 else DEFAULT_RETENTION
    expire_timestamp = now + retention if retention != DEFAULT_RETENTION else -1
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetValue] = {}
    group_ok = group_allowed(broker, context, AclOperation.READ, body.group_id)
    readable = allowed_topics(broker, context, AclOperation.READ, [t.name for t in body.topics])
    for topic in body.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if not group_ok:
                errors[key] = ErrorCode.GROUP_AUTHORIZATION_FAILED
                continue
            if topic.name not in readable:
                errors[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if broker.replica_manager.metadata_cache.partition(*key) is None:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets[key] = OffsetValue(
                partition.committed_offset,
                partition.committed_leader_epoch if version >= FIRST_LEADER_EPOCH_VERSION else -1,
                partition.committed_metadata or "", now, expire_timestamp)
    if offsets:
        syncs: list = []
        errors.update(broker.group_coordinator.commit_offsets(
            body.group_id, body.member_id,
            body.group_instance_id if version >= FIRST_STATIC_VERSION else None,
            body.generation_id_or_member_epoch, offsets, syncs, version))
        for future, partitions in syncs:
            try:
                # Shielded: a closed connection must not cancel the sync's
                # future, whose completion puts the offsets in the cache.
                await asyncio.shield(future)
            except (LogError, StoreError) as exc:
                log.error("group %s: offset commit not stored: %s", body.group_id, exc)
                errors.update(dict.fromkeys(partitions, sync_error_code(exc.error_code)))
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": topic.name,
                    "partitions": [{"partition_index": p.partition_index,
                                    "error_code": errors[(topic.name, p.partition_index)]}
                                   for p in topic.partitions]}
                   for topic in body.topics],
    }

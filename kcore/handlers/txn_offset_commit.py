"""TxnOffsetCommit (key 28): a transactional producer commits a group's
offsets inside its transaction (kcore.coordinator.group.txn_offsets). The
producer's epoch is checked by the transaction's own markers: a fenced
producer's EndTxn fails, so its offsets are aborted with it."""
from __future__ import annotations

from kcore.clock import wall_ms
from kcore.coordinator.group.records import OffsetValue
from kcore.handlers import txn_errors
from kcore.handlers.authz import allowed_topics, group_allowed, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_LEADER_EPOCH_VERSION = 2
FIRST_GROUP_METADATA_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    version = request.api_version
    now = wall_ms(broker.group_coordinator.manager.clock)  # written with each offset
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetValue] = {}
    refusal = None
    if not txn_allowed(broker, context, AclOperation.WRITE, body.transactional_id):
        refusal = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not group_allowed(broker, context, AclOperation.READ, body.group_id):
        refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
    readable = allowed_topics(broker, context, AclOperation.READ, [t.name for t in body.topics])
    for topic in body.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if refusal is not None or topic.name not in readable:
                errors[key] = refusal or ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if broker.replica_manager.metadata_cache.partition(*key) is None:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets[key] = OffsetValue(
                partition.committed_offset,
                partition.committed_leader_epoch if version >= FIRST_LEADER_EPOCH_VERSION else -1,
                partition.committed_metadata or "", now, -1)
    if offsets:
        with_group = version >= FIRST_GROUP_METADATA_VERSION
        results = await broker.group_coordinator.commit_txn_offsets(
            body.group_id, body.producer_id, body.producer_epoch,
            body.member_id if with_group else "",
            body.group_instance_id if with_group else None,
            body.generation_id if with_group else -1, offsets)
        errors.update({key: txn_errors.for_version(ApiKey.TXN_OFFSET_COMMIT, version, code)
                       for key, code in results.items()})
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": errors[(topic.name, p.partition_index)]} for p in topic.partitions]}
        for topic in body.topics]}

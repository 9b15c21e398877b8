"""ShareFetch (key 78): acknowledge and acquire records of a share group
(KIP-932); sessions, acknowledgements and acquisition are in
coordinator/share/manager.py.

Topics are named by id (an unknown id: UNKNOWN_TOPIC_ID). Each partition
answers with the batches that hold its acquired records, the acquired
offset ranges with their delivery counts, and the outcome of its
acknowledgements; a partition this broker does not lead answers
NOT_LEADER_OR_FOLLOWER with its current leader, whose endpoint is in
``node_endpoints``. v2 may renew locks (IsRenewAck, KIP-1222): such a
request fetches nothing and must ask for nothing (INVALID_REQUEST).

Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
(TOPIC_AUTHORIZATION_FAILED per partition).
"""
from __future__ import annotations

import asyncio
import uuid

from kcore.coordinator.share.manager import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    PartitionResult,
    ShareRequestError,
)
from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_common import acknowledgements, answer_partitions, node_endpoints, refused
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

RENEW_VERSION = 2
# ShareAcquireMode (v2, KIP-1206): 0 batch-optimized, 1 record-limit.
RECORD_LIMIT = 1


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    share = broker.share_groups
    renew = request.api_version >= RENEW_VERSION and body.is_renew_ack
    lock_ms = share.configs.lock_duration_ms(body.group_id) if body.group_id else 0
    error = _check(broker, context, body, renew)
    if error is not None:
        return _top_level(error, lock_ms)
    wanted = [(topic.topic_id, partition.partition_index)
              for topic in body.topics for partition in topic.partitions]
    forgotten = [(topic.topic_id, index) for topic in body.forgotten_topics_data
                 for index in topic.partitions]
    try:
        session = share.partitions.open_session(body.group_id, body.member_id, body.share_session_epoch,
                                                wanted, forgotten)
    except ShareRequestError as exc:
        return _top_level((exc.error_code, str(exc)), lock_ms)
    results: dict[tuple[uuid.UUID, int], PartitionResult] = {}
    refused_topics = _refused_topics(broker, context, body)
    await acknowledgements(share.partitions, body, session, refused_topics, results, renew)
    if body.share_session_epoch == FINAL_EPOCH:
        await share.partitions.close_session(session)
    elif not renew:
        record_limit = request.api_version >= RENEW_VERSION and body.share_acquire_mode == RECORD_LIMIT
        await _acquire(broker, body, session, refused_topics, results, record_limit)
    responses, leaders = answer_partitions(results, with_records=True)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "acquisition_lock_timeout_ms": lock_ms, "responses": responses,
            "node_endpoints": node_endpoints(broker, context, leaders)}


def _check(broker: BrokerFacade, context, body, renew: bool) -> tuple[int, str] | None:
    if not body.group_id:
        return ErrorCode.INVALID_GROUP_ID, "GroupId must be set."
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, "READ on the group is needed."
    if not body.member_id:
        return ErrorCode.INVALID_REQUEST, "MemberId must be set."
    if body.share_session_epoch == INITIAL_EPOCH and any(
            partition.acknowledgement_batches for topic in body.topics for partition in topic.partitions):
        return ErrorCode.INVALID_REQUEST, "Acknowledge data present on initial fetch request."
    if renew and (body.max_wait_ms or body.min_bytes or body.max_records):
        return ErrorCode.INVALID_REQUEST, "A renew-only share fetch must ask for no records."
    return None


def _refused_topics(broker: BrokerFacade, context, body) -> set[uuid.UUID]:
    if broker.authorizer is None:
        return set()
    names = {topic.topic_id: broker.topic_ids.name_of(topic.topic_id) for topic in body.topics}
    allowed = allowed_topics(broker, context, AclOperation.READ, [n for n in names.values() if n])
    return {topic_id for topic_id, name in names.items() if name is not None and name not in allowed}


async def _acquire(broker: BrokerFacade, body, session, refused_topics: set[uuid.UUID],
                   results: dict[tuple[uuid.UUID, int], PartitionResult], record_limit: bool) -> None:
    manager = broker.share_groups.partitions
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
    for key in list(session.partitions):
        if key[0] in refused_topics:
            results.setdefault(key, PartitionResult(*key)).error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            session.partitions.pop(key, None)
    while True:
        partitions = await manager.acquire(session, body.max_records, body.max_bytes, results, record_limit)
        ready = any(result.acquired is not None or result.error_code != ErrorCode.NONE
                    for result in results.values())
        remaining = deadline - loop.time()
        if ready or remaining <= 0:
            return
        await manager.wait(partitions, remaining)


def _top_level(error: tuple[int, str], lock_ms: int) -> dict:
    answer = refused(error)
    answer["acquisition_lock_timeout_ms"] = lock_ms
    return answer

"""ShareAcknowledge (key 79): acknowledge acquired records without
fetching (KIP-932). It runs in the member's share session: epoch 0 is
INVALID_SHARE_SESSION_EPOCH (a session is opened by a ShareFetch), an
unknown session SHARE_SESSION_NOT_FOUND, -1 closes the session after the
acknowledgements. Each partition answers its acknowledgements' outcome
(INVALID_RECORD_STATE for an offset not acquired by this member: nothing
changed). v2 may carry RENEW acknowledgements (KIP-1222) and answers the
acquisition lock timeout.

Needs READ on the group and on each topic.
"""
from __future__ import annotations

import uuid

from kcore.coordinator.share.manager import FINAL_EPOCH, INITIAL_EPOCH, PartitionResult, ShareRequestError
from kcore.handlers.authz import allowed_topics, group_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.share_common import acknowledgements, answer_partitions, node_endpoints, refused
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

RENEW_VERSION = 2


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    share = broker.share_groups
    lock_ms = share.configs.lock_duration_ms(body.group_id) if body.group_id else 0
    error = _check(broker, context, body)
    if error is not None:
        return _answer(refused(error), lock_ms)
    try:
        session = share.partitions.open_session(body.group_id, body.member_id, body.share_session_epoch,
                                                [], [])
    except ShareRequestError as exc:
        return _answer(refused((exc.error_code, str(exc))), lock_ms)
    refused_topics: set[uuid.UUID] = set()
    if broker.authorizer is not None:
        names = {topic.topic_id: broker.topic_ids.name_of(topic.topic_id) for topic in body.topics}
        allowed = allowed_topics(broker, context, AclOperation.READ, [n for n in names.values() if n])
        refused_topics = {topic_id for topic_id, name in names.items() if name and name not in allowed}
    results: dict[tuple[uuid.UUID, int], PartitionResult] = {}
    renew = request.api_version >= RENEW_VERSION and body.is_renew_ack
    await acknowledgements(share.partitions, body, session, refused_topics, results, renew)
    if body.share_session_epoch == FINAL_EPOCH:
        await share.partitions.close_session(session)
    responses, leaders = answer_partitions(results, with_records=False)
    return _answer({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                    "responses": responses, "node_endpoints": node_endpoints(broker, context, leaders)},
                   lock_ms)


def _check(broker: BrokerFacade, context, body) -> tuple[int, str] | None:
    if not body.group_id:
        return ErrorCode.INVALID_GROUP_ID, "GroupId must be set."
    if not group_allowed(broker, context, AclOperation.READ, body.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, "READ on the group is needed."
    if not body.member_id:
        return ErrorCode.INVALID_REQUEST, "MemberId must be set."
    if body.share_session_epoch == INITIAL_EPOCH:
        return ErrorCode.INVALID_SHARE_SESSION_EPOCH, "A share session is opened by a ShareFetch."
    return None


def _answer(answer: dict, lock_ms: int) -> dict:
    answer["acquisition_lock_timeout_ms"] = lock_ms
    return answer

"""CreatePartitions (key 37): grow a topic's partition count, optionally
with the replicas of each new partition."""
from __future__ import annotations

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import add_partitions, wait_for_leaders
from kcore.metadata import TopicError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    results = []
    for topic in body.topics:
        code: int = ErrorCode.NONE
        message: str | None = None
        assignment = [list(a.broker_ids) for a in topic.assignments] if topic.assignments else None
        if not topic_allowed(broker, context, AclOperation.ALTER, topic.name):
            results.append({"name": topic.name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": None})
            continue
        try:
            info = await add_partitions(broker, topic.name, topic.count, assignment,
                                        body.validate_only)
            if not body.validate_only and not await wait_for_leaders(
                    broker, topic.name, info.num_partitions, body.timeout_ms / 1000):
                code, message = ErrorCode.REQUEST_TIMED_OUT, "the new partitions have no leader yet"
        except TopicError as exc:
            code, message = exc.error_code, exc.message
        results.append({"name": topic.name, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "results": results}

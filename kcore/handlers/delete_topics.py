"""DeleteTopics (key 20). As in Kafka (ZkAdminManager, DelayedDeleteTopics):
each deletion is queued with the controller, then the answer waits, up to
the request's timeout_ms, until this broker's metadata no longer shows the
topic. One still there by then is answered REQUEST_TIMED_OUT and stays
queued: the controller deletes a topic only once no partition of it is
being reassigned (librdkafka hides that error when its operation timeout
is 0, because the deletion goes on). No served version (0-3) carries an
error message: Kafka added one at v5."""
from __future__ import annotations

import asyncio

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import delete_topic
from kcore.metadata import TopicError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

# How often a DeleteTopics waiting for the deletion looks at the metadata
# cache: a cluster controller takes a few ms per change.
DELETED_POLL_S = 0.01


async def handle(broker: BrokerFacade, context, request):
    results = []
    queued = []
    for name in request.body.topic_names:
        code: int = ErrorCode.NONE
        if not topic_allowed(broker, context, AclOperation.DELETE, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not broker.config["delete.topic.enable"]:
            code = ErrorCode.TOPIC_DELETION_DISABLED
        else:
            try:
                await delete_topic(broker, name)
            except TopicError as exc:
                code = exc.error_code
        result = {"name": name, "error_code": code}
        if code == ErrorCode.NONE:
            queued.append(result)
        results.append(result)
    await _wait_until_deleted(broker, [r["name"] for r in queued], request.body.timeout_ms / 1000)
    for result in queued:
        if broker.replica_manager.metadata_cache.contains(result["name"]):
            result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
    return {"throttle_time_ms": 0, "responses": results}


async def _wait_until_deleted(broker: BrokerFacade, names: list[str], timeout_s: float) -> None:
    cache = broker.replica_manager.metadata_cache
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_s, 0)
    while any(cache.contains(name) for name in names) and loop.time() < deadline:
        await asyncio.sleep(DELETED_POLL_S)


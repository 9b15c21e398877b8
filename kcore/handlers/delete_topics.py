"""DeleteTopics (key 20). As in Kafka (ZkAdminManager, DelayedDeleteTopics):
each deletion is queued with the controller, then the answer waits, up to
the request's timeout_ms, until this broker's metadata no longer shows the
topic. One still there by then is answered REQUEST_TIMED_OUT and stays
queued: the controller deletes a topic only once no partition of it is
being reassigned (librdkafka hides that error when its operation timeout
is 0, because the deletion goes on)."""
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
        message: str | None = None
        if not topic_allowed(broker, context, AclOperation.DELETE, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not broker.config["delete.topic.enable"]:
            code, message = ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false"
        else:
            try:
                await delete_topic(broker, name)
            except TopicError as exc:
                code, message = exc.error_code, exc.message
        result = {"name": name, "error_code": code, "error_message": message}
        if code == ErrorCode.NONE:
            queued.append(result)
        results.append(result)
    await _wait_until_deleted(broker, [r["name"] for r in queued], request.body.timeout_ms / 1000)
    for result in queued:
        if broker.replica_manager.metadata_cache.contains(result["name"]):
            result.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                          error_message=_still_there(broker, result["name"]))
    return {"throttle_time_ms": 0, "responses": results}


async def _wait_until_deleted(broker: BrokerFacade, names: list[str], timeout_s: float) -> None:
    cache = broker.replica_manager.metadata_cache
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_s, 0)
    while any(cache.contains(name) for name in names) and loop.time() < deadline:
        await asyncio.sleep(DELETED_POLL_S)


def _still_there(broker: BrokerFacade, name: str) -> str:
    info = broker.controller.topic(name)
    if info is not None and (info.adding_replicas or info.removing_replicas):
        return (f"the deletion of {name!r} is queued until the reassignment of partitions "
                f"{sorted({*info.adding_replicas, *info.removing_replicas})} completes")
    return f"the deletion of {name!r} is queued; the topic is not deleted yet"

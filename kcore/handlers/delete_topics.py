"""DeleteTopics (key 20). As in Kafka (ZkAdminManager, DelayedDeleteTopics):
each deletion is queued with the controller, then the answer waits, up to
the request's timeout_ms, until this broker's metadata no longer shows the
topic (under the id it had: one created again meanwhile under the same
name is another topic). One still there by then is answered
REQUEST_TIMED_OUT and stays queued: the controller deletes a topic only
once no partition of it is being reassigned (librdkafka hides that error
when its operation timeout is 0, because the deletion goes on).

v5+ results carry an error_message. v6 (KIP-516) names each topic by name
or by topic_id, as Kafka's ControllerApis.deleteTopics checks them:
neither, or both, is INVALID_REQUEST, and so is a name or id given twice;
an unknown id is UNKNOWN_TOPIC_ID; an id whose topic the principal may
not describe is TOPIC_AUTHORIZATION_FAILED with a null name, so the
answer tells nothing of ids it may not see. Every result carries the
topic's id (zero when no topic was found or it may not be described)."""
from __future__ import annotations

import asyncio
import uuid

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import delete_topic
from kcore.metadata import NO_TOPIC_ID, TopicError
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

# How often a DeleteTopics waiting for the deletion looks at the metadata
# cache: a cluster controller takes a few ms per change.
DELETED_POLL_S = 0.01
FIRST_BY_ID = 6

# The messages Kafka's ApiError gives these codes when it has no other words.
_MESSAGES: dict[int, str] = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    ErrorCode.TOPIC_DELETION_DISABLED: "Topic deletion is disabled.",
    ErrorCode.REQUEST_TIMED_OUT: "the deletion is queued; the topic is not deleted yet",
}


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    results: list[dict] = []
    wanted = _by_id(broker, context, body.topics, results) if request.api_version >= FIRST_BY_ID \
        else [(name, NO_TOPIC_ID) for name in body.topic_names]
    queued: list[tuple[dict, uuid.UUID]] = []
    for name, topic_id in _drop_repeated_names(wanted, results):
        result = await _delete(broker, context, name, topic_id)
        if result["error_code"] == ErrorCode.NONE:
            queued.append((result, result["topic_id"]))
        results.append(result)
    await _wait_until_deleted(broker, queued, body.timeout_ms / 1000)
    for result, topic_id in queued:
        if _still_there(broker, result["name"], topic_id):
            _fail(result, ErrorCode.REQUEST_TIMED_OUT)
    return {"throttle_time_ms": 0, "responses": results}


def _by_id(broker: BrokerFacade, context, topics, results: list[dict]) -> list[tuple[str, uuid.UUID]]:
    """v6: the (name, id) of each topic to delete, resolving ids to names;
    what cannot be deleted goes straight to ``results``."""
    wanted: list[tuple[str, uuid.UUID]] = []
    ids = [t.topic_id for t in topics if t.name is None]
    repeated_ids = {topic_id for topic_id in ids if ids.count(topic_id) > 1}
    for topic in topics:
        if topic.name is None and topic.topic_id == NO_TOPIC_ID:
            results.append(_refusal(None, NO_TOPIC_ID, ErrorCode.INVALID_REQUEST,
                                    "Neither topic name nor id were specified."))
        elif topic.name is not None and topic.topic_id != NO_TOPIC_ID:
            results.append(_refusal(topic.name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                                    "You may not specify both topic name and topic id."))
        elif topic.name is not None:
            wanted.append((topic.name, NO_TOPIC_ID))
        elif topic.topic_id in repeated_ids:
            if topic.topic_id not in [r["topic_id"] for r in results]:
                results.append(_refusal(None, topic.topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
        else:
            name = _name_of(broker, topic.topic_id)
            if name is None:
                results.append(_refusal(None, topic.topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
            elif not topic_allowed(broker, context, AclOperation.DESCRIBE, name):
                results.append(_refusal(None, topic.topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            else:
                wanted.append((name, topic.topic_id))
    return wanted


def _name_of(broker: BrokerFacade, topic_id: uuid.UUID) -> str | None:
    """The metadata cache's name for the id, or the controller's (a topic
    this broker just created may not have reached its cache)."""
    name = broker.replica_manager.metadata_cache.topic_name(topic_id)
    if name is None:
        info = broker.controller.topic_by_id(topic_id)
        name = info.name if info is not None else None
    return name


def _drop_repeated_names(wanted: list[tuple[str, uuid.UUID]],
                         results: list[dict]) -> list[tuple[str, uuid.UUID]]:
    """A topic named twice (by name, or by name and by its id) is refused
    once, as Kafka refuses duplicates; the others go on."""
    names = [name for name, _ in wanted]
    repeated = {name for name in names if names.count(name) > 1}
    for name in sorted(repeated):
        results.append(_refusal(name, NO_TOPIC_ID, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return [(name, topic_id) for name, topic_id in wanted if name not in repeated]


async def _delete(broker: BrokerFacade, context, name: str, topic_id: uuid.UUID) -> dict:
    if not topic_allowed(broker, context, AclOperation.DELETE, name):
        # Named by id and describable: the name may be told (Kafka's rule).
        return _refusal(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not broker.config["delete.topic.enable"]:
        return _refusal(name, NO_TOPIC_ID, ErrorCode.TOPIC_DELETION_DISABLED)
    info = broker.controller.topic(name)
    current = info.topic_id if info is not None else NO_TOPIC_ID
    if topic_id != NO_TOPIC_ID and current != topic_id:  # deleted and created again since
        return _refusal(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
    try:
        await delete_topic(broker, name)
    except TopicError as exc:
        return _refusal(name, NO_TOPIC_ID, exc.error_code, exc.message)
    return {"name": name, "topic_id": current, "error_code": ErrorCode.NONE, "error_message": None}


def _refusal(name: str | None, topic_id: uuid.UUID, code: int, message: str | None = None) -> dict:
    return {"name": name, "topic_id": topic_id, "error_code": code,
            "error_message": message or _MESSAGES.get(code)}


def _fail(result: dict, code: int) -> None:
    result["error_code"] = code
    result["error_message"] = _MESSAGES.get(code)


def _still_there(broker: BrokerFacade, name: str, topic_id: uuid.UUID) -> bool:
    cache = broker.replica_manager.metadata_cache
    if topic_id == NO_TOPIC_ID:
        return cache.contains(name)
    return cache.topic_name(topic_id) is not None


async def _wait_until_deleted(broker: BrokerFacade, queued: list[tuple[dict, uuid.UUID]],
                              timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_s, 0)
    while any(_still_there(broker, result["name"], topic_id) for result, topic_id in queued) \
            and loop.time() < deadline:
        await asyncio.sleep(DELETED_POLL_S)

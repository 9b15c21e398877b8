"""DeleteTopics (key 20)."""
from __future__ import annotations

from kcore.controller.metadata import TopicError
from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.handlers.topics import delete_topic
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    results = []
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
        results.append({"name": name, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "responses": results}

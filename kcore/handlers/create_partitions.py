"""CreatePartitions (key 37): grow a topic's partition count."""
from __future__ import annotations

from kcore.controller.local import TopicError
from kcore.handlers.topics import add_partitions
from kcore.protocol.errors import ErrorCode


async def handle(broker, context, request):
    body = request.body
    results = []
    for topic in body.topics:
        code, message = ErrorCode.NONE, None
        try:
            add_partitions(broker, topic.name, topic.count, body.validate_only)
        except TopicError as exc:
            code, message = exc.error_code, exc.message
        results.append({"name": topic.name, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "results": results}

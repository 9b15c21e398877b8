"""FindCoordinator (key 10): the broker coordinating a group or transaction.

On one node that is this broker for every key. A group lookup (key_type 0,
the only kind before v1) creates `__consumer_offsets` when it does not
exist yet, as Kafka does, so the first commit does not pay for it. Unknown
key types get INVALID_REQUEST; v1+ carries an error_message.
"""
from __future__ import annotations

import logging

from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(broker, context, request):
    body = request.body
    key_type = body.key_type if request.api_version >= 1 else GROUP_KEY_TYPE
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _error(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    if key_type == GROUP_KEY_TYPE:
        coordinator = broker.group_coordinator
        if not coordinator.active:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not running")
        try:
            coordinator.manager.ensure_topic()
        except Exception as exc:  # TopicError from the controller, OSError from the log
            log.error("cannot create __consumer_offsets: %s", exc)
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"__consumer_offsets is unavailable: {exc}")
    host, port = broker.config.advertised_address()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "node_id": broker.config.broker_id, "host": host, "port": port}


def _error(code: int, message: str) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "node_id": -1, "host": "", "port": -1}

"""SaslHandshake (key 17) and SaslAuthenticate (key 36) once dispatched.

On a SASL listener the connection runs the exchange itself before any
request reaches a handler (kcore.server.sasl), so these see only what comes
after it: a second handshake, or either request on a listener without SASL.
Kafka answers both with ILLEGAL_SASL_STATE.
"""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle_handshake(broker: BrokerFacade, context, request):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


async def handle_authenticate(broker: BrokerFacade, context, request):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate is not expected on this connection now",
            "auth_bytes": b"", "session_lifetime_ms": 0}

"""SaslHandshake (key 17) and SaslAuthenticate (key 36) once dispatched.

On a SASL listener the connection runs the exchange itself before any
request reaches a handler (kcore.server.sasl), and so does a
re-authentication (KIP-368). These see only the rest: a second handshake
where sessions do not expire or sooner than a second after the last
re-authentication began, or either request on a listener without SASL.
Kafka answers them with ILLEGAL_SASL_STATE.
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

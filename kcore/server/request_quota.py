"""request_percentage: the share of the event loop a client's requests may
take, measured as Kafka measures request handler thread time.

A handler runs as steps between its awaits; ``Timed`` drives the handler's
coroutine itself (server/relay.py) and adds up the time spent inside those
steps, so waits (a long-polling fetch, acks=all replication) cost nothing
and work does.
A quota of Q percent allows Q/100 s of such time per second (Kafka: a
percentage of one request handler thread). A client over it gets the time
owed as ``throttle_time_ms`` and its connection muted that long, the same
as for byte rates; the larger of the two throttles wins, as in Kafka.
ApiVersions, SASL and the broker-to-broker APIs are exempt (Kafka's
exempt sensor); the relay's ~1 us per await is paid only by clients a
request quota applies to.
"""
from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any

from kcore.clock import SYSTEM_CLOCK, Clock
from kcore.protocol.api_keys import ApiKey
from kcore.security.quotas import REQUEST_PERCENTAGE, ClientQuotas, user_of
from kcore.server.relay import relay

EXEMPT = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                    ApiKey.CONTROLLED_SHUTDOWN, ApiKey.ALTER_PARTITION,
                    ApiKey.WRITE_TXN_MARKERS})


class Timed:
    """Await a coroutine, adding the time spent inside it to ``busy_s``
    (read on ``clock``'s monotonic clock: CLOCK_MONOTONIC, nanoseconds, as
    perf_counter on Linux)."""

    __slots__ = ("_coro", "_clock", "busy_s")

    def __init__(self, coro: Coroutine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._coro = coro
        self._clock = clock
        self.busy_s = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield from relay(self._coro, timer=self))

    def now(self) -> float:
        return self._clock.monotonic()

    def add(self, seconds: float) -> None:
        self.busy_s += seconds


def applies(quotas: ClientQuotas, api_key: int, context, request) -> bool:
    return (api_key not in EXEMPT and quotas.quota(
        REQUEST_PERCENTAGE, user_of(context.principal), request.header.client_id or "") is not None)


async def run_timed(quotas: ClientQuotas, context, request, handling: Coroutine):
    """The handler's body, with the request's time recorded against the
    client's request_percentage."""
    timed = Timed(handling)
    body = await timed
    throttle_ms = quotas.record(REQUEST_PERCENTAGE, user_of(context.principal),
                                request.header.client_id or "", timed.busy_s * 100)
    if throttle_ms > 0:
        context.mute_ms = max(context.mute_ms, throttle_ms)
        if isinstance(body, dict) and "throttle_time_ms" in body:
            body["throttle_time_ms"] = max(body["throttle_time_ms"] or 0, throttle_ms)
    return body

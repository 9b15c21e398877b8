"""ApiVersions (key 18): the version range of every API this broker serves.

Clients pick the highest version both sides know, so these ranges decide
what the other handlers must implement (docs/protocol.md#client-versions).
The ranges are those of docs/apis.md."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode


async def handle(broker: BrokerFacade, context, request):
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": [
            {"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in sorted(broker.api_versions.items())
        ],
        "throttle_time_ms": 0,
    }

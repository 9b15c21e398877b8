"""ApiVersions (key 18): the version range of every API this broker serves.

Clients pick the highest version both sides know, so these ranges decide
what the other handlers must implement (docs/protocol.md#client-versions).
The ranges are those of docs/apis.md.

v3+ reports the finalized features as Kafka 4.2 does for a new cluster's
share groups: share.version 1 (KIP-932 enabled). Kafka leaves out of
SupportedFeatures before v4 the features whose min version is 0
(KAFKA-17011), share.version (0-1) among them."""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode

FEATURES_VERSION = 3
SHARE_VERSION = 1


async def handle(broker: BrokerFacade, context, request):
    answer = {
        "error_code": ErrorCode.NONE,
        "api_keys": [
            {"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in sorted(broker.api_versions.items())
        ],
        "throttle_time_ms": 0,
    }
    if request.api_version >= FEATURES_VERSION:
        answer["finalized_features_epoch"] = 0
        answer["finalized_features"] = [{"name": "share.version", "max_version_level": SHARE_VERSION,
                                         "min_version_level": SHARE_VERSION}]
    return answer

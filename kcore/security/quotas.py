"""Client quotas: byte rates and request time per user and client id.

Quota entities are Kafka's: a user, a client id, or both, each a name or
``<default>`` (None here). The quota that applies to a connection is the
first found in Kafka's order (``ClientQuotaManager``): user + client-id,
user + default client-id, user, default user + client-id, default user +
default client-id, default user, client-id, default client-id. The user is
the principal's name (``User:alice`` -> ``alice``).

Rates are measured like Kafka's ``Rate`` sensor: 1 s samples, the last 11
kept; a client over its quota is throttled for the time that brings the
measured rate back to the quota: ``bytes / quota - window``. Unlike Kafka,
the window counts from the first sample, not from a notional 10 s: Kafka's
floor lets a fresh client send 10 s of quota at full speed, and a bounded
test (5 s at 1 MB/s) could not see the limit at all.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

USER = "user"
CLIENT_ID = "client-id"
ENTITY_TYPES = (USER, CLIENT_ID)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)

SAMPLES = 11  # Kafka's quota.window.num
SAMPLE_S = 1.0  # Kafka's quota.window.size.seconds
MAX_THROTTLE_MS = int(SAMPLES * SAMPLE_S * 1000)  # Kafka's cap: the whole measured window
# Rates kept before idle ones (nothing in the last window) are dropped: a
# client cycling client ids cannot grow the broker's memory without bound.
MAX_RATES = 10000


class QuotaEntity(NamedTuple):
    """(entity type, name or None for <default>) pairs, sorted by type."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, parts: Iterable[tuple[str, str | None]]) -> QuotaEntity:
        items = sorted(parts, key=lambda part: ENTITY_TYPES.index(part[0])
                       if part[0] in ENTITY_TYPES else 99)
        return cls(tuple(items))

    def to_json(self) -> dict:
        return dict(self.parts)

    def describe(self) -> str:
        return ", ".join(f"{kind}={'<default>' if name is None else name}"
                         for kind, name in self.parts)


class QuotaError(ValueError):
    """An entity or quota Kafka refuses: INVALID_REQUEST."""


def validate_entity(parts: list[tuple[str, str | None]]) -> QuotaEntity:
    kinds = [kind for kind, _ in parts]
    if not parts:
        raise QuotaError("the entity is empty")
    for kind in kinds:
        if kind not in ENTITY_TYPES:
            raise QuotaError(f"unknown entity type {kind!r} (expected user or client-id)")
    if len(set(kinds)) != len(kinds):
        raise QuotaError("an entity type appears twice in the entity")
    for kind, name in parts:
        if name == "":
            raise QuotaError(f"the {kind} name is empty (null means <default>)")
    return QuotaEntity.of(parts)


def validate_quota(key: str, value: float) -> None:
    if key not in QUOTA_KEYS:
        raise QuotaError(f"unknown quota {key!r} (expected one of {', '.join(QUOTA_KEYS)})")
    if not value > 0 or value != value:
        raise QuotaError(f"{key} must be positive, got {value}")


class Rate:
    """Sum of recorded values over the last SAMPLES samples of SAMPLE_S."""

    __slots__ = ("_samples",)

    def __init__(self) -> None:
        self._samples: deque[list[float]] = deque()  # [start, total]

    def record(self, value: float, now: float) -> None:
        samples = self._samples
        while samples and samples[0][0] <= now - SAMPLES * SAMPLE_S:
            samples.popleft()
        if not samples or now >= samples[-1][0] + SAMPLE_S:
            samples.append([now, 0.0])
        samples[-1][1] += value

    def idle(self, now: float) -> bool:
        return not self._samples or self._samples[-1][0] <= now - SAMPLES * SAMPLE_S

    def unrecord(self, value: float) -> None:
        if self._samples:
            self._samples[-1][1] -= value

    def throttle_ms(self, quota: float, now: float) -> int:
        """How long to wait until the measured rate is back at ``quota``."""
        if not self._samples:
            return 0
        total = sum(sample[1] for sample in self._samples)
        window = max(now - self._samples[0][0], SAMPLE_S)
        return min(max(int((total / quota - window) * 1000), 0), MAX_THROTTLE_MS)


def user_of(principal: str) -> str:
    return principal.partition(":")[2]


class ClientQuotas:
    """Quota configuration and the rates measured against it."""

    def __init__(self) -> None:
        self.configs: dict[QuotaEntity, dict[str, float]] = {}
        self._rates: dict[tuple, Rate] = {}
        self._resolved: dict[tuple[str, str, str], tuple | None] = {}
        self.active = False  # any quota configured: handlers skip all of this otherwise
        self.limits_requests = False  # some request_percentage: dispatch times requests

    def replace(self, configs: dict[QuotaEntity, dict[str, float]]) -> None:
        """Install the quota configuration; measured rates carry on (a
        client does not get a fresh allowance when any quota changes)."""
        configs = {entity: dict(values) for entity, values in configs.items() if values}
        if configs == self.configs:
            return
        self.configs = configs
        self._resolved.clear()
        self.active = bool(self.configs)
        self.limits_requests = any(REQUEST_PERCENTAGE in values for values in configs.values())

    def quota(self, key: str, user: str, client_id: str) -> tuple[float, tuple] | None:
        """(quota, the rate's key) that applies, or None (unlimited)."""
        cache_key = (key, user, client_id)
        if cache_key not in self._resolved:
            if len(self._resolved) >= MAX_RATES:  # bounded like the rates
                self._resolved.clear()
            self._resolved[cache_key] = self._resolve(key, user, client_id)
        return self._resolved[cache_key]

    def _resolve(self, key: str, user: str, client_id: str) -> tuple[float, tuple] | None:
        candidates = [
            ((USER, user), (CLIENT_ID, client_id)), ((USER, user), (CLIENT_ID, None)),
            ((USER, user),), ((USER, None), (CLIENT_ID, client_id)),
            ((USER, None), (CLIENT_ID, None)), ((USER, None),),
            ((CLIENT_ID, client_id),), ((CLIENT_ID, None),),
        ]
        for parts in candidates:
            values = self.configs.get(QuotaEntity(parts))
            if values is not None and key in values:
                # Kafka's sensor tags: the actual names of the entity's types;
                # every client sharing them shares the rate.
                kinds = {kind for kind, _ in parts}
                tags = (key, user if USER in kinds else "", client_id if CLIENT_ID in kinds else "")
                return values[key], tags
        return None

    def record(self, key: str, user: str, client_id: str, value: float,
               now: float | None = None) -> int:
        """Record ``value`` against the quota that applies; the throttle
        time in ms (0 under the quota or without one)."""
        found = self.quota(key, user, client_id)
        if found is None:
            return 0
        quota, tags = found
        now = time.monotonic() if now is None else now
        rate = self._rates.get(tags)
        if rate is None:
            if len(self._rates) >= MAX_RATES:
                self._forget_idle(now)
            rate = self._rates[tags] = Rate()
        rate.record(value, now)
        return rate.throttle_ms(quota, now)

    def _forget_idle(self, now: float) -> None:
        for tags in [tags for tags, rate in self._rates.items() if rate.idle(now)]:
            del self._rates[tags]

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value: a fetch answered empty because its
        data would have put the client over its quota (Kafka does the same)."""
        found = self.quota(key, user, client_id)
        if found is not None and found[1] in self._rates:
            self._rates[found[1]].unrecord(value)

    def throttle_ms(self, key: str, user: str, client_id: str, now: float | None = None) -> int:
        """The throttle time owed already, before anything more is recorded."""
        found = self.quota(key, user, client_id)
        if found is None or found[1] not in self._rates:
            return 0
        now = time.monotonic() if now is None else now
        return self._rates[found[1]].throttle_ms(found[0], now)

    def describe(self, entities: Iterable[QuotaEntity] | None = None
                 ) -> list[tuple[QuotaEntity, dict[str, float]]]:
        wanted = self.configs if entities is None else {e: None for e in entities}
        return [(entity, dict(self.configs[entity])) for entity in wanted if entity in self.configs]

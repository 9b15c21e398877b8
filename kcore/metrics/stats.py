"""Counters and histograms of one broker, kept as plain Python numbers.

The hot paths only add to ints (a produce adds bytes and messages per
partition, a request its latency and the error codes of its answer); the
metric families, labels and cumulative buckets are built when /metrics is
scraped. No locks: every writer and the scrape run on the broker's event
loop. ``LOG_FLUSH_STATS`` is process-wide, as Kafka's ``LogFlushStats`` is.

Not thread-safe: one event loop owns each instance.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from kcore.metrics.socket_server import SocketServerStats
from kcore.protocol import RESPONSES
from kcore.protocol.api_keys import ApiKey

# Request latency in ms (Kafka's TotalTimeMs): a produce on loopback takes
# ~0.1-1 ms, a long-polling fetch up to its max_wait_ms (500 ms by default),
# a group join up to the rebalance timeout.
LATENCY_BUCKETS_MS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
                      10000, 30000)
# fsync / fdatasync in ms: ~0.14 ms p50, ~0.21 ms p99 after a 4 KiB append on
# the reference machine (docs/performance.md#the-reference-machine); slow
# disks and large flushes reach seconds.
FLUSH_BUCKETS_MS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000)
# Appends made durable by one group-commit round: 1 when producers are
# alone, up to the producers x partitions in flight under load.
ROUND_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Histogram:
    """Counts per bucket (not cumulative) and the sum of observed values."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Iterable[float]):
        self.bounds = tuple(float(bound) for bound in bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound belongs to that bucket (le).
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations <= it) per bucket, ending with +Inf."""
        total = 0
        buckets = []
        for bound, count in zip((*self.bounds, float("inf")), self.counts):
            total += count
            buckets.append((bound, total))
        return buckets


class TopicCounters:
    """Kafka's BrokerTopicMetrics of one topic."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out", "replication_bytes_out")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0  # to consumers
        self.replication_bytes_out = 0  # to followers


class BrokerTopicStats:
    """Per-topic counters; a deleted topic's go with it, as in Kafka."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}

    def _counters(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def record_produce(self, topic: str, size: int, messages: int) -> None:
        counters = self._counters(topic)
        counters.bytes_in += size
        counters.messages_in += messages

    def record_fetch(self, topic: str, size: int, follower: bool) -> None:
        if not size:
            return
        counters = self._counters(topic)
        if follower:
            counters.replication_bytes_out += size
        else:
            counters.bytes_out += size

    def remove_topics(self, topics: Iterable[str]) -> None:
        for topic in topics:
            self.topics.pop(topic, None)


def request_name(api_key: int) -> str:
    """Kafka's ApiKeys name: LIST_OFFSETS -> ListOffsets."""
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


def _error_paths(fields: Iterable[Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of struct arrays whose elements carry an error_code."""
    paths: list[tuple[str, ...]] = []
    for field in fields:
        if field.kind == "array" and field.element == "struct":
            path = (*prefix, field.name)
            if any(child.name == "error_code" for child in field.nested.fields):
                paths.append(path)
            paths += _error_paths(field.nested.fields, path)
    return paths


# api key -> (top-level error_code?, paths of nested error codes), from the
# response schemas: a produce answer is walked once per partition, no more.
ERROR_PATHS: dict[int, tuple[bool, tuple[tuple[str, ...], ...]]] = {
    key: (any(f.name == "error_code" for f in message.fields), tuple(_error_paths(message.fields)))
    for key, message in RESPONSES.items()}


def _get(item: Any, name: str) -> Any:
    return item.get(name) if type(item) is dict else getattr(item, name, None)


def _collect(items: Any, path: tuple[str, ...], depth: int, found: list[int]) -> None:
    """The non-zero error codes under ``items`` along ``path`` into
    ``found``: loops, not a generator per item (a fetch answer of 16
    partitions was walked through 17 generators, ~2% of the broker's CPU
    at 20k msg/s)."""
    if not items:
        return
    if depth == len(path):
        for item in items:
            code = item.get("error_code") if type(item) is dict else getattr(item, "error_code", None)
            if code:
                found.append(code)
        return
    name = path[depth]
    for item in items:
        _collect(item.get(name) if type(item) is dict else getattr(item, name, None), path, depth + 1,
                 found)


def error_codes(api_key: int, body: Any) -> list[int]:
    """Every error code other than NONE in a response body."""
    top, paths = ERROR_PATHS.get(api_key, (False, ()))
    found: list[int] = []
    if top:
        code = _get(body, "error_code")
        if code:
            found.append(code)
    for path in paths:
        _collect(_get(body, path[0]), path, 1, found)
    return found


class RequestStats:
    """Kafka's RequestMetrics per API: requests per version, errors per
    error code found in the answers, and the latency histogram. Fetches
    are split into FetchConsumer and FetchFollower, as Kafka does."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}  # (request, version) -> count
        self.errors: dict[tuple[str, int], int] = {}    # (request, error code) -> count
        self.total_time_ms: dict[str, Histogram] = {}
        self._names = {int(key): request_name(key) for key in ApiKey}

    def name_of(self, api_key: int, body: Any) -> str:
        if api_key == ApiKey.FETCH:
            return "FetchFollower" if getattr(body, "replica_id", -1) >= 0 else "FetchConsumer"
        return self._names.get(api_key) or str(api_key)

    def record(self, api_key: int, version: int, request_body: Any, elapsed_ms: float,
               response_body: Any) -> str:
        """Count one answered request; returns its name."""
        name = self.name_of(api_key, request_body)
        key = (name, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        histogram = self.total_time_ms.get(name)
        if histogram is None:
            histogram = self.total_time_ms[name] = Histogram(LATENCY_BUCKETS_MS)
        histogram.observe(elapsed_ms)
        if response_body is not None:
            errors = self.errors
            for code in error_codes(api_key, response_body):
                error_key = (name, code)
                errors[error_key] = errors.get(error_key, 0) + 1
        return name


class DelayedOperations:
    """Requests parked in a purgatory: ``with stats.delayed_produce:``."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        self.size = 0

    def __enter__(self) -> DelayedOperations:
        self.size += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.size -= 1


class BrokerStats:
    """What one broker counts; handlers reach it as ``broker.stats``."""

    def __init__(self) -> None:
        self.topics = BrokerTopicStats()
        self.requests = RequestStats()
        self.delayed_produce = DelayedOperations()  # acks=all waiting for the ISR
        self.delayed_fetch = DelayedOperations()    # fetches waiting for data
        self.delayed_delete_records = DelayedOperations()  # DeleteRecords waiting for the replicas
        self.connections_created: dict[str, int] = {}  # per listener
        self.socket_server = SocketServerStats()  # re-authentication, per listener


class LogFlushStats:
    """Kafka's LogFlushStats (LogFlushRateAndTimeMs) for every fsync of a
    log (Log.flush) and every group-commit round, and the appends each
    round made durable."""

    def __init__(self) -> None:
        self.flush_time_ms = Histogram(FLUSH_BUCKETS_MS)
        self.round_size = Histogram(ROUND_SIZE_BUCKETS)

    def record_round(self, appends: int, elapsed_ms: float) -> None:
        self.round_size.observe(appends)
        self.flush_time_ms.observe(elapsed_ms)


LOG_FLUSH_STATS = LogFlushStats()

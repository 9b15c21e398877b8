"""Kafka's socket-server-metrics of re-authentication (KIP-368), per
listener: successful-reauthentication-total / -rate,
failed-reauthentication-total, expired-connections-killed-count and
reauthentication-latency-avg / -max; and kcore's count of requests that
carried bytes after their last field (answered, as Kafka answers them).

Rates and the latency average and maximum are Kafka's sampled stats with
its defaults (``metrics.num.samples`` = 2 windows of
``metrics.sample.window.ms`` = 30 s): they cover the last 30-60 s, and an
average or maximum over no sample is NaN, as in Kafka. Totals count from
the broker's start.

Not thread-safe: the broker's event loop owns it, like BrokerStats.
"""
from __future__ import annotations

import math
import time
from collections import deque

SAMPLE_WINDOW_S = 30.0  # Kafka's metrics.sample.window.ms
NUM_SAMPLES = 2  # Kafka's metrics.num.samples


class SampledStat:
    """Count, sum and maximum of the values recorded in the last
    NUM_SAMPLES windows of SAMPLE_WINDOW_S (Kafka's SampledStat)."""

    __slots__ = ("_samples",)

    def __init__(self) -> None:
        # [window start (monotonic s), count, sum, max] per window, oldest first.
        self._samples: deque[list[float]] = deque(maxlen=NUM_SAMPLES)

    def record(self, value: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if not self._samples or now - self._samples[-1][0] >= SAMPLE_WINDOW_S:
            self._samples.append([now, 0, 0.0, -math.inf])
        sample = self._samples[-1]
        sample[1] += 1
        sample[2] += value
        sample[3] = max(sample[3], value)

    def _current(self, now: float) -> list[list[float]]:
        return [s for s in self._samples if now - s[0] < SAMPLE_WINDOW_S * NUM_SAMPLES]

    def avg(self, now: float | None = None) -> float:
        samples = self._current(time.monotonic() if now is None else now)
        count = sum(s[1] for s in samples)
        return sum(s[2] for s in samples) / count if count else math.nan

    def max(self, now: float | None = None) -> float:
        samples = [s for s in self._current(time.monotonic() if now is None else now) if s[1]]
        return max(s[3] for s in samples) if samples else math.nan

    def rate(self, now: float | None = None) -> float:
        """Events a second: the count over the time the samples span, at
        least NUM_SAMPLES - 1 whole windows (Kafka's Rate)."""
        now = time.monotonic() if now is None else now
        samples = self._current(now)
        if not samples:
            return 0.0
        elapsed = max(now - samples[0][0], SAMPLE_WINDOW_S * (NUM_SAMPLES - 1))
        return sum(s[1] for s in samples) / elapsed


class SocketServerStats:
    """The re-authentication metrics of every listener of one broker."""

    def __init__(self) -> None:
        self.successful_reauthentication: dict[str, int] = {}
        self.failed_reauthentication: dict[str, int] = {}
        self.expired_connections_killed: dict[str, int] = {}
        self.reauthentication_latency_ms: dict[str, SampledStat] = {}
        # Requests answered although bytes followed their last field, per
        # (listener, api key): Kafka ignores such bytes, and so does kcore.
        self.requests_with_trailing_bytes: dict[tuple[str, int], int] = {}
        # File slices of fetch answers whose pages were not in the page
        # cache, read by a worker thread instead of sent by sendfile.
        self.cold_slices = 0
        self.cold_bytes = 0

    def reauthenticated(self, listener: str, latency_ms: float) -> None:
        counts = self.successful_reauthentication
        counts[listener] = counts.get(listener, 0) + 1
        self.reauthentication_latency_ms.setdefault(listener, SampledStat()).record(latency_ms)

    def reauthentication_failed(self, listener: str) -> None:
        counts = self.failed_reauthentication
        counts[listener] = counts.get(listener, 0) + 1

    def trailing_bytes(self, listener: str, api_key: int) -> None:
        counts = self.requests_with_trailing_bytes
        counts[(listener, api_key)] = counts.get((listener, api_key), 0) + 1

    def cold_read(self, size: int) -> None:
        self.cold_slices += 1
        self.cold_bytes += size

    def expired_connection_killed(self, listener: str) -> None:
        counts = self.expired_connections_killed
        counts[listener] = counts.get(listener, 0) + 1

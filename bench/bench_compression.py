"""Batch codec throughput and ratio on 1 MiB of JSON-like log lines.

Runs under pytest-benchmark (disabled by default in pyproject):

    .venv/bin/python -m pytest bench/bench_compression.py --benchmark-enable

or standalone, printing one table (MB/s of uncompressed bytes, ratio =
uncompressed / compressed):

    .venv/bin/python -m bench.bench_compression

The input is deterministic (seeded), so figures compare across runs and
machines. Each codec runs with kcore's settings, which are Kafka's defaults
(see kcore/protocol/compression.py).
"""

from __future__ import annotations

import json
import random
import time

import pytest

from kcore.protocol.compression import CompressionType, compress, decompress

INPUT_SIZE = 1 << 20
SEED = 20240917

_LEVELS = ["INFO"] * 14 + ["DEBUG"] * 4 + ["WARN"] * 2 + ["ERROR"]
_PATHS = ["/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/users/{id}", "/health",
          "/api/v1/cart", "/api/v1/search", "/static/app.js", "/api/v1/payments"]
_METHODS = ["GET"] * 6 + ["POST"] * 3 + ["PUT", "DELETE"]
_SERVICES = ["checkout", "catalog", "gateway", "auth", "search"]


def log_lines(size: int = INPUT_SIZE, seed: int = SEED) -> bytes:
    """``size`` bytes of newline-separated JSON records shaped like service logs."""
    rng = random.Random(seed)
    timestamp = 1_700_000_000_000
    lines = []
    total = 0
    while total < size:
        timestamp += rng.randint(0, 40)
        path = rng.choice(_PATHS).replace("{id}", str(rng.randint(1, 500_000)))
        record = {
            "ts": timestamp,
            "level": rng.choice(_LEVELS),
            "service": rng.choice(_SERVICES),
            "trace_id": f"{rng.getrandbits(64):016x}",
            "method": rng.choice(_METHODS),
            "path": path,
            "status": rng.choice([200] * 20 + [201, 204, 301, 400, 404, 500]),
            "latency_ms": round(rng.lognormvariate(3, 0.8), 2),
            "user_id": rng.randint(1, 2_000_000),
        }
        line = json.dumps(record, separators=(",", ":")).encode() + b"\n"
        lines.append(line)
        total += len(line)
    return b"".join(lines)[:size]


DATA = log_lines()
CODECS = [c for c in CompressionType if c != CompressionType.NONE]
_COMPRESSED = {}


def _compressed(codec: CompressionType) -> bytes:
    if codec not in _COMPRESSED:
        _COMPRESSED[codec] = compress(codec, DATA)
    return _COMPRESSED[codec]


def _annotate(benchmark, codec: CompressionType) -> None:
    compressed = _compressed(codec)
    benchmark.extra_info["codec"] = codec.kafka_name
    benchmark.extra_info["input_bytes"] = len(DATA)
    benchmark.extra_info["compressed_bytes"] = len(compressed)
    benchmark.extra_info["ratio"] = round(len(DATA) / len(compressed), 3)


def _record_throughput(benchmark) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is not None and stats.stats.mean:
        benchmark.extra_info["MB_per_s"] = round(len(DATA) / stats.stats.mean / 1e6, 1)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.kafka_name)
def test_compress_1mib_log_lines(benchmark, codec):
    _annotate(benchmark, codec)
    result = benchmark(compress, codec, DATA)
    _record_throughput(benchmark)
    assert decompress(codec, result) == DATA


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.kafka_name)
def test_decompress_1mib_log_lines(benchmark, codec):
    _annotate(benchmark, codec)
    result = benchmark(decompress, codec, _compressed(codec))
    _record_throughput(benchmark)
    assert result == DATA


def _best_seconds(function, *args, repeat: int = 7, min_time: float = 0.2) -> float:
    """Best-of-``repeat`` seconds per call, each sample looping for ``min_time``."""
    best = float("inf")
    for _ in range(repeat):
        calls, start = 0, time.perf_counter()
        while True:
            function(*args)
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best


def main() -> None:
    print(f"input: {len(DATA)} bytes of JSON log lines (seed {SEED})")
    print(f"{'codec':<8}{'ratio':>8}{'compress MB/s':>16}{'decompress MB/s':>18}")
    for codec in CODECS:
        compressed = _compressed(codec)
        compress_s = _best_seconds(compress, codec, DATA)
        decompress_s = _best_seconds(decompress, codec, compressed)
        print(f"{codec.kafka_name:<8}{len(DATA) / len(compressed):>8.2f}"
              f"{len(DATA) / compress_s / 1e6:>16.1f}{len(DATA) / decompress_s / 1e6:>18.1f}")


if __name__ == "__main__":
    main()

"""Message bodies for the load generators, one kind per realistic corpus.

Every kind is deterministic for a given seed, so two runs (and two brokers)
are fed the same bytes:

- ``half-random``: the OpenMessaging Benchmark payload shape, half random
  bytes, half a repeating pattern; compresses to about half.
- ``random``: os-random bytes; incompressible, the codecs' worst case.
- ``json-logs``: JSON web access-log lines (ip, time, method, path, status,
  bytes, referrer, user agent, latency), newline separated, the
  typical log-shipping payload.
- ``text``: English prose, slices of the Python documentation that ships
  with the interpreter (``pydoc_data.topics``, ~465 kB), so no download.

A pool holds ``POOL_SIZE`` distinct messages; producers cycle through it.
64 distinct 1 KiB messages already defeat codec dictionaries across a
1 MB batch far less than real data would, so the pool is 1024 messages
(1 MiB at 1 KiB): larger than any batch the clients build.
"""
from __future__ import annotations

import json
import random
import struct

POOL_SIZE = 1024
KINDS = ("half-random", "random", "json-logs", "text")
# Send time in seconds since the epoch (float64, big endian) at the start of
# a latency-stamped message; the consumer subtracts it from its own clock.
STAMP = struct.Struct(">d")

_PATHS = ("/", "/index.html", "/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/users/{id}",
          "/static/app.{id}.js", "/static/style.css", "/login", "/search?q={word}",
          "/products/{id}", "/cart", "/checkout", "/health", "/metrics")
_METHODS = ("GET",) * 8 + ("POST", "POST", "PUT", "DELETE")
_STATUSES = (200,) * 20 + (201, 204, 301, 302, 304, 304, 400, 401, 403, 404, 404, 500, 503)
_AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
           "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
           "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
           "curl/8.5.0", "python-requests/2.31.0", "Go-http-client/1.1",
           "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148")
_REFERRERS = ("-", "https://www.example.com/", "https://www.example.com/products",
              "https://search.example.org/?q=kafka", "-", "-")
_WORDS = ("kafka", "broker", "log", "offset", "stream", "topic", "consumer", "partition", "shoes",
          "laptop", "coffee", "book", "phone", "camera", "desk", "lamp")


def pool(kind: str, message_bytes: int, seed: int = 0, count: int = POOL_SIZE) -> list[bytes]:
    """``count`` distinct messages of about ``message_bytes`` bytes each
    (exactly that size except ``json-logs``, which keeps whole lines)."""
    rng = random.Random(seed)
    if kind == "half-random":
        return [_half_random(rng, message_bytes) for _ in range(count)]
    if kind == "random":
        return [rng.randbytes(message_bytes) for _ in range(count)]
    if kind == "json-logs":
        return [_json_lines(rng, message_bytes) for _ in range(count)]
    if kind == "text":
        corpus = _text_corpus()
        starts = [rng.randrange(0, len(corpus) - message_bytes) for _ in range(count)]
        return [corpus[start:start + message_bytes] for start in starts]
    raise ValueError(f"unknown payload kind {kind!r}; one of {', '.join(KINDS)}")


def _half_random(rng: random.Random, size: int) -> bytes:
    head = rng.randbytes(size // 2)
    offset = rng.randrange(251)
    return head + bytes((offset + i) % 251 for i in range(size - len(head)))


def _json_lines(rng: random.Random, size: int) -> bytes:
    lines = []
    total = 0
    while total < size:
        line = json.dumps(_access_log_entry(rng), separators=(",", ":")).encode()
        lines.append(line)
        total += len(line) + 1
    return b"\n".join(lines)


def _access_log_entry(rng: random.Random) -> dict:
    path = rng.choice(_PATHS).format(id=rng.randrange(1, 100_000), word=rng.choice(_WORDS))
    return {"remote_addr": f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            "time": f"2026-11-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                    f"{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z",
            "method": rng.choice(_METHODS), "path": path, "protocol": "HTTP/1.1",
            "status": rng.choice(_STATUSES), "body_bytes": rng.randrange(0, 60_000),
            "referrer": rng.choice(_REFERRERS), "user_agent": rng.choice(_AGENTS),
            "request_time_ms": round(rng.expovariate(1 / 40), 3),
            "upstream": f"app-{rng.randrange(1, 9)}:8080"}


_TEXT: bytes | None = None


def _text_corpus() -> bytes:
    global _TEXT
    if _TEXT is None:
        from pydoc_data.topics import topics
        _TEXT = "\n".join(topics[name] for name in sorted(topics)).encode()
    return _TEXT

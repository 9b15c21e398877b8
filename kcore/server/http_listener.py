"""``http.listeners``: GET /metrics in Prometheus text format, the web
console (/ and /static/*) and its JSON endpoints (/api/*), on the loop.

A minimal HTTP/1.1 server on asyncio rather than prometheus-client's own
(a thread): the collector and the console then read the broker's state on
the event loop that owns it, with no lock and no torn dict iteration. One
request per connection (``Connection: close``), which is what Prometheus,
curl and a page's fetch() handle; a request head larger than 8 KiB, a body
larger than 1 MiB, a request slower than 10 s or a reader of the answer
slower than 30 s is refused or dropped.

Writes (POST, PUT) must say ``Content-Type: application/json``: a page of
another origin can only send that after a CORS preflight, which is never
answered, so it cannot change topics through a browser on this machine.

A port that is taken is logged and the broker serves Kafka without the
endpoint: it is for operators, the Kafka listeners are the service
(several brokers of one test run or machine would otherwise fail to start
on the default port).

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
import re
from importlib import resources
from typing import Protocol
from urllib.parse import parse_qsl

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest

from kcore.config import split_http_listener, split_listener
from kcore.console import api
from kcore.console.base import ConsoleSource
from kcore.server.http_hosts import AllowedHosts
from kcore.server.http_request import BadRequest, body_length, media_type, parse_head
from kcore.server.metrics import BrokerCollector, MetricsSource
from kcore.server.sockets import start_http_servers

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
# Console bodies are a topic's configs or an offset reset: a few KiB.
MAX_BODY_BYTES = 1 << 20
READ_TIMEOUT_S = 10.0
# A client that stops reading its answer (a browse is up to a few MiB of
# JSON) is dropped after this, its buffer with it.
WRITE_TIMEOUT_S = 30.0

_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_STATIC_NAME = re.compile(r"[a-z0-9_-]+\.(html|js|css|svg)")
JSON = "application/json"


class HttpSource(MetricsSource, ConsoleSource, Protocol):
    """The Broker as /metrics and the console read it."""


class HttpListeners:
    def __init__(self, broker: HttpSource):
        self.broker = broker
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker))
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, process_resident_memory_bytes
        self._servers: list[asyncio.Server] = []
        self._static: dict[str, bytes] = {}
        config = broker.config
        own = [split_http_listener(item)[0] for item in config["http.listeners"]]
        own += [split_listener(item)[1] for item in config["listeners"] + (config["advertised.listeners"] or [])]
        self.allowed_hosts = AllowedHosts(config["http.allowed.hosts"], own)

    async def start(self, listeners: list[str], strict: bool) -> None:
        """Serve on each of ``listeners`` (sockets.start_http_servers)."""
        self._servers += await start_http_servers(self._serve, listeners, strict, setting="http.listeners",
                                                  serving="/metrics and the console", limit=MAX_HEAD_BYTES)

    def bound_ports(self) -> list[int]:
        return [server.sockets[0].getsockname()[1] for server in self._servers]

    def close(self) -> None:
        for server in self._servers:
            server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, target, headers, body = await asyncio.wait_for(_read_request(reader), READ_TIMEOUT_S)
                peer = writer.get_extra_info("peername")
                host = peer[0] if isinstance(peer, tuple) else ""
                answer = await self._answer(method, target, body, host, headers.get("host"))
            except BadRequest as exc:
                answer = _response(exc.status, f"{exc}\n".encode())
            writer.write(answer)
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, method: str, target: str, body: bytes, host: str = "",
                      host_header: str | None = None) -> bytes:
        path, _, query = target.partition("?")
        if path != "/metrics" and not self.allowed_hosts.allows(host_header):
            return _response(403, f"Host {host_header!r} is not a name of this broker: add it to "
                                  f"http.allowed.hosts to reach the console by it\n".encode())
        if path.startswith("/api/"):
            status, payload = await api.dispatch(self.broker, method, path,
                                                 dict(parse_qsl(query, keep_blank_values=True)), body,
                                                 host)
            return _response(status, payload, JSON)
        if method not in ("GET", "HEAD"):
            return _response(405, b"only GET and HEAD here\n")
        if path == "/metrics":
            metrics = generate_latest(self.registry)
            return _response(200, metrics if method == "GET" else b"", CONTENT_TYPE_LATEST, len(metrics))
        if path in ("/", "/index.html"):
            return self._static_file(method, "index.html")
        return self._static_file(method, path.removeprefix("/static/") if path.startswith("/static/") else "")

    def _static_file(self, method: str, name: str) -> bytes:
        if not _STATIC_NAME.fullmatch(name):
            return _response(404, b"not found: see / for the console, /metrics for Prometheus\n")
        data = self._static.get(name)
        if data is None:
            try:
                data = (resources.files("kcore.console") / "static" / name).read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return _response(404, b"not found\n")
            self._static[name] = data
        content_type = _STATIC_TYPES["." + name.rsplit(".", 1)[1]]
        return _response(200, data if method == "GET" else b"", content_type, len(data))


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    method, target, _, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
    return method, target, headers, await _read_body(reader, method, headers)


async def _read_body(reader: asyncio.StreamReader, method: str, headers: dict[str, str]) -> bytes:
    length = body_length(headers, MAX_BODY_BYTES)
    if method in ("POST", "PUT") and media_type(headers) != JSON:
        raise BadRequest(415, f"send the body as {JSON}")
    return await reader.readexactly(length) if length else b""


_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            409: "Conflict", 411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
            500: "Internal Server Error", 504: "Gateway Timeout"}


def _response(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
              length: int | None = None) -> bytes:
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nCache-Control: no-cache\r\n"
            f"X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n")
    return head.encode() + body

"""``http.listeners``: GET /metrics in Prometheus text format, on the loop.

A minimal HTTP/1.1 server on asyncio rather than prometheus-client's own
(a thread): the collector then reads the broker's state on the event loop
that owns it, with no lock and no torn dict iteration. One request per
connection (``Connection: close``), which is what Prometheus and curl
send; a request head larger than 8 KiB or slower than 10 s is dropped.

A port that is taken is logged and the broker serves Kafka without
/metrics: the endpoint is for operators, the Kafka listeners are the
service (several brokers of one test run or machine would otherwise fail
to start on the default port).

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest

from kcore.config import split_http_listener
from kcore.server.metrics import BrokerCollector, MetricsSource

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
READ_TIMEOUT_S = 10.0


class HttpListeners:
    def __init__(self, broker: MetricsSource):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker))
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, process_resident_memory_bytes
        self._servers: list[asyncio.Server] = []

    async def start(self, listeners: list[str]) -> None:
        for item in listeners:
            host, port = split_http_listener(item)
            try:
                server = await asyncio.start_server(self._serve, host or None, port, reuse_address=True,
                                                    limit=MAX_HEAD_BYTES)
            except OSError as exc:
                log.warning("http.listeners: cannot listen on %s (%s); /metrics is not served there",
                            item, exc.strerror)
                continue
            self._servers.append(server)
            log.info("serving /metrics on http://%s:%d", host, server.sockets[0].getsockname()[1])

    def bound_ports(self) -> list[int]:
        return [server.sockets[0].getsockname()[1] for server in self._servers]

    def close(self) -> None:
        for server in self._servers:
            server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            writer.write(self._answer(head))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, head: bytes) -> bytes:
        parts = head.split(b"\r\n", 1)[0].split()
        if len(parts) != 3:
            return _response(400, b"bad request\n")
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return _response(405, b"only GET\n")
        if target != b"/metrics":
            return _response(404, b"see /metrics\n")
        body = generate_latest(self.registry)
        return _response(200, body if method == b"GET" else b"", CONTENT_TYPE_LATEST, len(body))


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def _response(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
              length: int | None = None) -> bytes:
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + body

"""``schema.registry.listeners``: the schema registry's HTTP/1.1 server,
Confluent's REST API at the root (kcore/schema_registry/rest.py).

Unlike the console's listener, connections are kept alive: serializers
and registry clients send many small requests (httpx, Java's
HttpURLConnection), and a new connection per lookup would cost more than
the lookup. Bounds: a request head of 8 KiB, a body of
``MAX_BODY_BYTES`` (413 beyond, never read), 10 s to send a request, 30 s
to read an answer, a connection idle for 60 s is closed.

Bodies (POST, PUT) must be JSON: ``application/vnd.schemaregistry.v1+json``,
``application/vnd.schemaregistry+json`` or ``application/json``, as
Confluent takes them (415 otherwise). A page of another origin can send
none of these without a CORS preflight, which is never answered, so it
cannot write to the registry through a browser; the ``Host`` check of the
console (http_hosts.py) keeps out pages that rebind their own name.

Who may do what is registry_auth.py's: HTTP basic auth and the ACLs.

A taken port stops the broker when the listeners were set in its config,
and is logged and skipped when they are the default.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from urllib.parse import parse_qsl

from kcore.schema_registry import rest
from kcore.schema_registry.errors import RegistryError
from kcore.server.http_hosts import AllowedHosts
from kcore.server.http_request import BadRequest, body_length, media_type, parse_head
from kcore.server.registry_auth import RegistryAuth
from kcore.server.sockets import start_http_servers

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
# A schema is stored as one record of _schemas, whose max.message.bytes is
# 1 MiB by default; its JSON escaping can double it on the way in.
MAX_BODY_BYTES = 2 << 20
READ_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 60.0
BODY_TYPES = frozenset({"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                        "application/json", "application/octet-stream"})
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 411: "Length Required", 413: "Content Too Large",
            415: "Unsupported Media Type", 422: "Unprocessable Entity", 500: "Internal Server Error"}


class RegistryListeners:
    def __init__(self, service: rest.RegistryService, auth: RegistryAuth, allowed_hosts: AllowedHosts):
        self.service = service
        self.auth = auth
        self.allowed_hosts = allowed_hosts
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.StreamWriter] = set()

    async def start(self, listeners: list[str], strict: bool) -> None:
        """Serve on each of ``listeners`` (sockets.start_http_servers)."""
        self._servers += await start_http_servers(self._serve, listeners, strict,
                                                  setting="schema.registry.listeners",
                                                  serving="the schema registry", limit=MAX_HEAD_BYTES)

    def bound_ports(self) -> list[int]:
        return [server.sockets[0].getsockname()[1] for server in self._servers]

    def close(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._connections):
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else ""
        try:
            keep_alive = True
            while keep_alive:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_TIMEOUT_S)
                except (asyncio.IncompleteReadError, TimeoutError):
                    return
                try:
                    method, target, version, headers = parse_head(head)
                    method = method.upper()
                    keep_alive = _keeps_alive(version, headers)
                    body = await asyncio.wait_for(_read_body(reader, method, headers), READ_TIMEOUT_S)
                    status, payload, extra = await self._answer(method, target, headers, body, host)
                except BadRequest as exc:
                    keep_alive = False
                    status, payload, extra = exc.status, rest._json(
                        {"error_code": exc.status, "message": str(exc)}), {}
                writer.write(_response(status, payload, keep_alive and method != "HEAD", extra))
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
        except (asyncio.LimitOverrunError, TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(writer)
            writer.close()

    async def _answer(self, method: str, target: str, headers: dict[str, str], body: bytes,
                      host: str) -> tuple[int, bytes, dict[str, str]]:
        if not self.allowed_hosts.allows(headers.get("host")):
            raise BadRequest(403, f"Host {headers.get('host')!r} is not a name of this broker: add it to "
                                 f"http.allowed.hosts to reach the registry by it")
        path, _, query = target.partition("?")
        try:
            principal = await self.auth.authenticate(headers.get("authorization"), host)
        except RegistryError as exc:
            return exc.status, rest._json(exc.body()), {"WWW-Authenticate": 'Basic realm="kcore"'}
        request = rest.RestRequest(method, path.rstrip("/") or "", dict(parse_qsl(query, keep_blank_values=True)),
                                   body, {name: headers[name] for name in ("authorization", "x-forwarded-by")
                                          if name in headers}, target)
        status, payload = await rest.dispatch(self.service, request, self.auth.authorizer(principal, host))
        return status, payload, {}


def _keeps_alive(version: str, headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    return connection == "keep-alive" if version == "HTTP/1.0" else connection != "close"


async def _read_body(reader: asyncio.StreamReader, method: str, headers: dict[str, str]) -> bytes:
    length = body_length(headers, MAX_BODY_BYTES)
    if length and method in ("POST", "PUT") and media_type(headers) not in BODY_TYPES:
        raise BadRequest(415, "HTTP 415 Unsupported Media Type: send application/vnd.schemaregistry.v1+json")
    return await reader.readexactly(length) if length else b""


def _response(status: int, body: bytes, keep_alive: bool, extra: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", f"Content-Type: {rest.CONTENT_TYPE}",
             f"Content-Length: {len(body)}", "X-Content-Type-Options: nosniff",
             f"Connection: {'keep-alive' if keep_alive else 'close'}"]
    lines += [f"{name}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

"""Socket buffer sizes of the client listeners (Kafka's
``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes``).

They are set on the listening socket: Linux copies both sizes, and the
lock that stops autotuning, into every connection it accepts, and the
receive size must be known before the SYN-ACK, whose window scale it fixes
(a receive buffer set after accept could never offer more than the scale
chosen for the OS default). -1 (kcore's default, where Kafka's is 102400) keeps the OS default and its autotuning;
the kernel doubles a value set (bookkeeping overhead, man 7 socket) and
caps it at net.core.{w,r}mem_max.

Also: the listening loop both HTTP listeners share (``start_http_servers``).
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Callable, Iterable
from typing import Any

from kcore.config import ConfigError, split_http_listener

log = logging.getLogger(__name__)

USE_OS_DEFAULT = -1


def apply_buffer_sizes(sockets: Iterable[Any], send_bytes: int, receive_bytes: int) -> None:
    """Set the sizes other than -1 on each of a server's listening sockets."""
    for sock in sockets:
        if send_bytes != USE_OS_DEFAULT:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_bytes)
        if receive_bytes != USE_OS_DEFAULT:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_bytes)


def check_listening(server: Any) -> None:
    """Raise EADDRINUSE for a server whose listen() failed after its bind
    (another process took the port in between): uvloop hands that error to
    the loop's exception handler and closes the server instead of raising,
    which left ``server.sockets`` holding None."""
    if not server.sockets or any(sock is None for sock in server.sockets):
        server.close()
        raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))


async def start_http_servers(serve: Callable, listeners: list[str], strict: bool, *, setting: str,
                             serving: str, limit: int) -> list[asyncio.Server]:
    """A server per item of ``listeners`` (the config ``setting``'s value),
    each calling ``serve`` with a read ``limit``. One that cannot bind
    stops the broker when ``strict`` (the operator chose it) and is skipped
    with a warning otherwise (the default port, taken by another broker):
    these listeners are for operators and tools, the Kafka listeners are
    the service."""
    servers = []
    for item in listeners:
        host, port = split_http_listener(item)
        try:
            server = await asyncio.start_server(serve, host or None, port, reuse_address=True, limit=limit)
            check_listening(server)
        except OSError as exc:
            if strict:
                raise ConfigError(f"{setting}: cannot listen on {item}: {exc.strerror}") from None
            log.warning("%s: cannot listen on %s (%s); not serving %s there", setting, item, exc.strerror,
                        serving)
            continue
        servers.append(server)
        log.info("serving %s on http://%s:%d", serving, host, server.sockets[0].getsockname()[1])
    return servers

"""Socket buffer sizes of the client listeners (Kafka's
``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes``).

They are set on the listening socket: Linux copies both sizes, and the
lock that stops autotuning, into every connection it accepts, and the
receive size must be known before the SYN-ACK, whose window scale it fixes
(a receive buffer set after accept could never offer more than the scale
chosen for the OS default). -1 (kcore's default, where Kafka's is 102400) keeps the OS default and its autotuning;
the kernel doubles a value set (bookkeeping overhead, man 7 socket) and
caps it at net.core.{w,r}mem_max.
"""
from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterable
from typing import Any

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

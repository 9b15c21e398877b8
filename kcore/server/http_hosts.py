"""Which ``Host`` headers the console answers: a guard against DNS
rebinding.

A page on another site can make its own name resolve to 127.0.0.1 and
then talk to the console as a same-origin page: the ``Content-Type``
rule of http_listener.py does not stop it, because the browser sees no
cross-origin request. What it cannot change is the ``Host`` header, which
carries the attacker's name. So the console (``/``, ``/static/``,
``/api/``) answers only a Host that is an IP address, ``localhost``, this
machine's host name, a host named in ``http.listeners`` or the advertised
listeners, or one listed in ``http.allowed.hosts`` (``*``: any). /metrics
answers any Host: Prometheus scrapes by whatever name it was given, and
it only reads.
"""
from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable


def host_of(header: str) -> str:
    """The host of a Host header, without its port, lower case."""
    header = header.strip().lower()
    if header.startswith("["):  # [v6]:port
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class AllowedHosts:
    def __init__(self, configured: Iterable[str], own: Iterable[str]):
        names = {name.strip().lower() for name in configured if name.strip()}
        self.any = "*" in names
        self.names = names | {name.lower() for name in own if name} | {"localhost", socket.gethostname().lower()}

    def allows(self, header: str | None) -> bool:
        """True for a request without Host (HTTP/1.0) too: browsers always
        send one, so its absence is not a rebinding page."""
        if header is None or self.any:
            return True
        host = host_of(header)
        return _is_address(host) or host in self.names or host.endswith(".localhost")

"""How this process's brokers reach each other: the security of the
inter-broker listener (``inter.broker.listener.name``), set once at start
by the broker (or a node's supervisor) from its config, read by every
connection it opens to another broker (replica fetchers, the controller's
channels, the controller client, transaction markers).

One setting per process, like Kafka's broker-level
``security.inter.broker.protocol``: a process is one broker or one node's
supervisor. Unset (a client, a test) means PLAINTEXT.
"""
from __future__ import annotations

from kcore.client.security import ClientSecurity

_security: ClientSecurity | None = None


def set_inter_broker_security(security: ClientSecurity | None) -> None:
    global _security
    _security = security


def inter_broker_security() -> ClientSecurity | None:
    return _security

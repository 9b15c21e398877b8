"""One connection per broker id, for a broker's own requests to the others
(transaction markers, the console's end offsets): opened on first use over
the inter-broker listener's security, replaced once it closes, dropped by
the caller after a failure so the next use reconnects.

Not thread-safe: owned by the event loop that opens its connections.
"""
from __future__ import annotations

from collections.abc import Callable

from kcore.client.connection import BrokerConnection
from kcore.client.inter_broker import inter_broker_security

# broker id -> (host, port), or None when that broker is not live.
AddressOf = Callable[[int], "tuple[str, int] | None"]


class BrokerPool:
    def __init__(self, client_id: str, address_of: AddressOf, timeout_s: float):
        self.client_id = client_id
        self.address_of = address_of
        self.timeout_s = timeout_s
        self._connections: dict[int, BrokerConnection] = {}

    async def connection(self, broker_id: int) -> BrokerConnection:
        """The open connection to ``broker_id``; LookupError when it is not live."""
        connection = self._connections.get(broker_id)
        if connection is not None and not connection.closed:
            return connection
        address = self.address_of(broker_id)
        if address is None:
            raise LookupError(f"broker {broker_id} is not live")
        connection = await BrokerConnection.open(
            *address, client_id=self.client_id, request_timeout_s=self.timeout_s,
            connect_timeout_s=self.timeout_s, security=inter_broker_security())
        raced = self._connections.get(broker_id)
        if raced is not None and not raced.closed:  # another caller opened one meanwhile
            connection.close()
            return raced
        self._connections[broker_id] = connection
        return connection

    def drop(self, broker_id: int) -> None:
        connection = self._connections.pop(broker_id, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for broker_id in list(self._connections):
            self.drop(broker_id)

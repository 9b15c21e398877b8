"""A loopback server of bare KafkaConnections for the connection tests:
``dispatch`` answers every request, no broker behind it."""
from __future__ import annotations

import asyncio

from kcore.server.connection import KafkaConnection

MAX_REQUEST_BYTES = 1 << 20


async def serve(dispatch, connection_class: type[KafkaConnection] = KafkaConnection):
    """(server, port, connections): each accepted connection is appended
    to ``connections`` as the loop makes it."""
    connections: list[KafkaConnection] = []

    def factory() -> KafkaConnection:
        connection = connection_class(dispatch, "PLAINTEXT", MAX_REQUEST_BYTES,
                                      len(connections) + 1, lambda c: None)
        connections.append(connection)
        return connection

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], connections

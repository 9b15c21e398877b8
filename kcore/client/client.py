"""KafkaClient: bootstrap, one connection per broker, cached metadata.

The layers above (admin, producer, consumer) ask it for a connection to one
broker (``connection(broker_id)``), to the controller, or to any broker, and
for fresh metadata. Connections open on first use and are dropped from the
pool when they close, so the next use reconnects.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kcore.client.connection import BrokerConnection
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.metadata import ClusterMetadata
from kcore.client.security import ClientSecurity
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode

__all__ = ["KafkaClient", "parse_bootstrap_servers"]

DEFAULT_PORT = 9092
# How long close() waits for written requests (acks=0 produce) to leave.
CLOSE_TIMEOUT_S = 5.0


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """"h1:9092,h2" or ["h1:9092", ...] -> [(host, port), ...]; IPv6 as [::1]:9092."""
    if isinstance(servers, str):
        servers = servers.split(",")
    addresses = []
    for server in servers:
        server = server.strip()
        if not server:
            continue
        if server.startswith("["):
            host, _, rest = server[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port = server.rpartition(":") if ":" in server else (server, "", "")
        try:
            addresses.append((host, int(port) if port else DEFAULT_PORT))
        except ValueError:
            raise ValueError(f"bad bootstrap server {server!r}: port is not a number") from None
    if not addresses:
        raise ValueError("no bootstrap server given")
    return addresses


class KafkaClient:
    """Connections to a cluster and its metadata.

    Concurrency contract: owned by one event loop; coroutines may share it.
    Two coroutines asking for the same node at once share one connection
    attempt. ``metadata`` is replaced whole on each refresh.
    """

    def __init__(self, bootstrap_servers: str | Sequence[str], *, client_id: str = "kcore",
                 request_timeout_s: float = 30.0, connect_timeout_s: float = 10.0,
                 security: ClientSecurity | None = None) -> None:
        self.bootstrap_addresses = parse_bootstrap_servers(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.metadata = ClusterMetadata({}, -1, None, {})
        self._connections: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task] = {}
        self._bootstrap: BrokerConnection | None = None

    async def __aenter__(self) -> KafkaClient:
        await self.bootstrap()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def bootstrap(self) -> BrokerConnection:
        """A connection to the first bootstrap server that answers."""
        if self._bootstrap is not None and not self._bootstrap.closed:
            return self._bootstrap
        errors = []
        for host, port in self.bootstrap_addresses:
            try:
                self._bootstrap = await self._open(host, port)
                return self._bootstrap
            except BrokerConnectionError as exc:
                errors.append(str(exc))
        raise BrokerConnectionError("no bootstrap server reachable: " + "; ".join(errors))

    async def close(self) -> None:
        """Close every connection once what was written to it has gone out."""
        for task in self._connecting.values():
            task.cancel()
        connections = [c for c in [*self._connections.values(), self._bootstrap] if c is not None]
        for connection in connections:
            connection.close()
        self._connections.clear()
        self._bootstrap = None
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await asyncio.gather(*(c.wait_closed() for c in connections))
        except TimeoutError:
            pass

    async def _open(self, host: str, port: int) -> BrokerConnection:
        return await BrokerConnection.open(
            host, port, client_id=self.client_id, request_timeout_s=self.request_timeout_s,
            connect_timeout_s=self.connect_timeout_s, security=self.security)

    # ---------------------------------------------------------- connections

    async def connection(self, broker_id: int) -> BrokerConnection:
        """The connection to broker ``broker_id``, opened if needed."""
        connection = self._connections.get(broker_id)
        if connection is not None and not connection.closed:
            return connection
        task = self._connecting.get(broker_id)
        if task is None:
            task = asyncio.ensure_future(self._connect_broker(broker_id))
            self._connecting[broker_id] = task
            task.add_done_callback(lambda _: self._connecting.pop(broker_id, None))
        return await asyncio.shield(task)

    async def _connect_broker(self, broker_id: int) -> BrokerConnection:
        broker = self.metadata.brokers.get(broker_id)
        if broker is None:
            await self.refresh_metadata([])
            broker = self.metadata.brokers.get(broker_id)
        if broker is None:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not in metadata")
        connection = await self._open(broker.host, broker.port)
        connection.on_close = lambda closed: self._forget(broker_id, closed)
        self._connections[broker_id] = connection
        return connection

    def _forget(self, broker_id: int, connection: BrokerConnection) -> None:
        if self._connections.get(broker_id) is connection:
            del self._connections[broker_id]

    async def any_connection(self) -> BrokerConnection:
        """An open connection to some broker (the bootstrap one when nothing else is open)."""
        for connection in self._connections.values():
            if not connection.closed:
                return connection
        return await self.bootstrap()

    async def controller_connection(self) -> BrokerConnection:
        if self.metadata.controller_id < 0:
            await self.refresh_metadata([])
        if self.metadata.controller_id < 0:
            return await self.any_connection()
        return await self.connection(self.metadata.controller_id)

    async def leader_connection(self, topic: str, partition: int) -> BrokerConnection:
        leader = self.metadata.leader_for(topic, partition)
        if leader < 0:
            await self.refresh_metadata([topic])
            leader = self.metadata.leader_for(topic, partition)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, context=f"{topic}-{partition}")
        return await self.connection(leader)

    # -------------------------------------------------------------- metadata

    async def refresh_metadata(self, topics: Sequence[str] | None = None, *,
                               allow_auto_topic_creation: bool = False) -> ClusterMetadata:
        """Ask for ``topics`` (None: every topic, []: brokers only) and cache the answer.

        Topics named in the request replace their cached entries; the rest
        of the cache is kept. Per-topic errors stay in the returned
        ``TopicMetadata.error_code`` for the caller to judge.
        """
        connection = await self.any_connection()
        version = connection.version_for(ApiKey.METADATA)
        if topics is None:
            requested: list[dict[str, str]] | None = None if version >= 1 else []
        else:
            if not topics and version == 0:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                                 "Metadata v0 cannot ask for brokers without topics")
            requested = [{"name": name} for name in topics]
        body = await connection.request(ApiKey.METADATA, {
            "topics": requested, "allow_auto_topic_creation": allow_auto_topic_creation},
            version=version)
        fresh = ClusterMetadata.from_response(body)
        if topics is None:
            self.metadata = fresh
        else:
            self.metadata = self.metadata.merged(fresh)
        return fresh

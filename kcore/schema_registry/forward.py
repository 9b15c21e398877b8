"""Writes received by a broker that is not the registry's primary go on
to the primary over HTTP, as Confluent's followers forward to their
leader: the same method, path, query and body, with the caller's
``Authorization`` header, and the primary's answer goes back as it is.

The primary's registry address is its ``schema.registry.listeners``, which
this broker asks it for with DescribeConfigs (a Kafka API every broker
serves, over the inter-broker listener); a listener bound to every
interface is reached at the primary's advertised host. The address is
kept per broker id until a forward to it fails. Failures are Confluent's:
50004 when no broker leads ``_schemas``, 50003 when the primary cannot be
reached or serves no registry.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.config import WILDCARD_HOSTS, split_http_listener
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import ConfigResourceType
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache
from kcore.schema_registry import errors
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.rest import CONTENT_TYPE, RestRequest

LISTENERS_KEY = "schema.registry.listeners"
# A forwarded write waits for the primary's acks=all append; Confluent's
# own forwarding timeout is 30 s.
FORWARD_TIMEOUT_S = 30.0
MAX_ANSWER_BYTES = 4 << 20


class Forwarder:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache, leader_id: Callable[[], int | None]):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.leader_id = leader_id
        self._addresses: dict[int, tuple[str, int]] = {}
        self._pool = BrokerPool(f"kcore-schema-registry-{broker_id}", metadata_cache.address_of, 5.0)

    def close(self) -> None:
        self._pool.close()

    async def forward(self, request: RestRequest) -> tuple[int, bytes]:
        leader = self.leader_id()
        if leader is None:
            raise RegistryError(errors.UNKNOWN_LEADER, "Request failed since the leader is unknown")
        if leader == self.broker_id:
            raise RegistryError(errors.REQUEST_FORWARDING_FAILED, "this broker leads _schemas but is not "
                                                                  "ready to write yet; try again")
        host, port = await self._address(leader)
        try:
            return await asyncio.wait_for(_send(host, port, request), FORWARD_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
            self._addresses.pop(leader, None)
            raise RegistryError(errors.REQUEST_FORWARDING_FAILED,
                                f"Error while forwarding the request to the leader (broker {leader} at "
                                f"{host}:{port}): {exc or type(exc).__name__}") from None

    async def _address(self, leader: int) -> tuple[str, int]:
        known = self._addresses.get(leader)
        if known is not None:
            return known
        try:
            connection = await self._pool.connection(leader)
            answer = await connection.request(ApiKey.DESCRIBE_CONFIGS, {
                "resources": [{"resource_type": int(ConfigResourceType.BROKER), "resource_name": str(leader),
                               "configuration_keys": [LISTENERS_KEY]}],
                "include_synonyms": False})
        except (LookupError, BrokerConnectionError, KafkaError, OSError) as exc:
            self._pool.drop(leader)
            raise RegistryError(errors.REQUEST_FORWARDING_FAILED,
                                f"Error while forwarding the request to the leader: broker {leader}: {exc}") from None
        result = answer.results[0]
        values = [entry.value for entry in result.configs if entry.name == LISTENERS_KEY]
        if result.error_code != ErrorCode.NONE or not values or not values[0]:
            raise RegistryError(errors.REQUEST_FORWARDING_FAILED,
                                f"the registry's primary, broker {leader}, serves no schema registry "
                                f"({LISTENERS_KEY} is empty or unreadable)")
        host, port = split_http_listener(values[0].split(",")[0])
        if port == 0:
            raise RegistryError(errors.REQUEST_FORWARDING_FAILED,
                                f"the registry's primary, broker {leader}, listens on port 0: its address "
                                f"cannot be known")
        if host in WILDCARD_HOSTS:
            address = self.metadata_cache.address_of(leader)
            host = address[0] if address is not None else "127.0.0.1"
        self._addresses[leader] = (host, port)
        return host, port


async def _send(host: str, port: int, request: RestRequest) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a fresh connection; (status, body)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        head = [f"{request.method} {request.target or request.path} HTTP/1.1", f"Host: {host}:{port}",
                f"Content-Length: {len(request.body)}", f"Content-Type: {CONTENT_TYPE}", "Connection: close",
                "X-Forwarded-By: kcore"]
        if request.headers.get("authorization"):
            head.append(f"Authorization: {request.headers['authorization']}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + request.body)
        await writer.drain()
        status_line = (await reader.readuntil(b"\r\n")).decode("latin-1").split()
        headers = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        length = next((int(line.split(":", 1)[1]) for line in headers
                       if line.lower().startswith("content-length:")), None)
        if length is None or length > MAX_ANSWER_BYTES or len(status_line) < 2:
            raise ValueError("the primary's answer has no usable Content-Length")
        return int(status_line[1]), await reader.readexactly(length)
    finally:
        writer.close()

"""BrokerConnection against a scripted peer speaking the real protocol codec.

The peer decodes each request with kcore.protocol and answers through a
per-test ``respond(request)`` function, so framing, correlation ids,
pipelining, version negotiation and failure handling are checked on a real
socket without a broker.
"""
import asyncio

import pytest

from kcore import protocol
from kcore.client.client import parse_bootstrap_servers
from kcore.client.connection import BrokerConnection, negotiate_version
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode

CLOSE = object()
SILENT = object()


class ScriptedPeer:
    """A TCP server answering ApiVersions itself and other requests via ``respond``."""

    def __init__(self, respond=None, versions=None, api_versions=None):
        self.respond = respond or (lambda request: SILENT)
        self.versions = versions
        self.api_versions = api_versions or (lambda request: None)
        self.requests = []
        self.server = None

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                request = protocol.decode_request(memoryview(await reader.readexactly(size)))
                self.requests.append(request)
                answer = self._answer(request)
                if answer is CLOSE:
                    writer.close()
                    return
                if answer is not SILENT:
                    writer.write(b"".join(bytes(chunk) for chunk in answer))
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def _answer(self, request):
        if request.api_key == ApiKey.API_VERSIONS:
            scripted = self.api_versions(request)
            if scripted is not None:
                return scripted
            body = protocol.api_versions_body()
            if self.versions is not None:
                body["api_keys"] = [{"api_key": k, "min_version": lo, "max_version": hi}
                                    for k, (lo, hi) in self.versions.items()]
            return protocol.encode_response(request.header, body)
        answer = self.respond(request)
        if answer is CLOSE or answer is SILENT or isinstance(answer, list):
            return answer
        return protocol.encode_response(request.header, answer)


def _metadata_echo(request):
    names = [t.name for t in request.body.topics]
    return {"brokers": [], "cluster_id": None, "controller_id": -1,
            "topics": [{"error_code": 0, "name": name, "partitions": []} for name in names]}


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_pipelined_requests_each_get_their_own_response():
    async def scenario():
        async with ScriptedPeer(_metadata_echo) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            names = [f"topic-{i}" for i in range(50)]
            bodies = await asyncio.gather(*[
                connection.request(ApiKey.METADATA, {"topics": [{"name": n}]}) for n in names])
            connection.close()
            return names, [body.topics[0].name for body in bodies], peer.requests
    names, answered, requests = run(scenario())
    assert answered == names
    correlation_ids = [r.header.correlation_id for r in requests]
    assert len(set(correlation_ids)) == len(correlation_ids)


def test_requests_use_the_highest_version_both_sides_support():
    async def scenario():
        versions = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 5)}
        async with ScriptedPeer(_metadata_echo, versions=versions) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            await connection.request(ApiKey.METADATA, {"topics": [{"name": "a"}]})
            connection.close()
            return connection.version_for(ApiKey.METADATA), peer.requests[-1].api_version
    chosen, sent = run(scenario())
    assert chosen == sent == 5


def test_unsupported_api_versions_version_falls_back_to_v0_kip_511():
    def api_versions(request):
        if request.api_version > 0:
            return protocol.api_versions_error_response(request.header)
        return None

    async def scenario():
        async with ScriptedPeer(_metadata_echo, api_versions=api_versions) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            body = await connection.request(ApiKey.METADATA, {"topics": [{"name": "x"}]})
            connection.close()
            return [r.api_version for r in peer.requests], body.topics[0].name
    versions_sent, name = run(scenario())
    assert versions_sent[:2] == [3, 0]
    assert name == "x"


def test_a_wrong_correlation_id_closes_the_connection():
    def wrong_id(request):
        header = request.header._replace(correlation_id=request.header.correlation_id + 1000)
        return protocol.encode_response(header, _metadata_echo(request))

    async def scenario():
        async with ScriptedPeer(wrong_id) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            with pytest.raises(BrokerConnectionError, match="correlation id"):
                await connection.request(ApiKey.METADATA, {"topics": [{"name": "a"}]})
            return connection.closed
    assert run(scenario())


def test_a_request_without_answer_times_out_and_fails_the_others_too():
    async def scenario():
        async with ScriptedPeer(lambda request: SILENT) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            first = asyncio.ensure_future(connection.request(
                ApiKey.METADATA, {"topics": [{"name": "a"}]}, timeout_s=0.2))
            second = asyncio.ensure_future(connection.request(
                ApiKey.METADATA, {"topics": [{"name": "b"}]}, timeout_s=30))
            results = await asyncio.gather(first, second, return_exceptions=True)
            return results, connection.closed
    (first, second), closed = run(scenario())
    assert isinstance(first, BrokerConnectionError) and "no answer" in str(first)
    assert isinstance(second, BrokerConnectionError)
    assert closed


def test_a_peer_that_hangs_up_fails_the_pending_request():
    async def scenario():
        async with ScriptedPeer(lambda request: CLOSE) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            with pytest.raises(BrokerConnectionError, match="lost|closed"):
                await connection.request(ApiKey.METADATA, {"topics": [{"name": "a"}]})
            with pytest.raises(BrokerConnectionError):
                await connection.request(ApiKey.METADATA, {"topics": [{"name": "b"}]})
    run(scenario())


def test_acks_zero_produce_expects_no_answer_and_later_requests_still_match():
    def respond(request):
        if request.api_key == ApiKey.PRODUCE:
            return SILENT
        return _metadata_echo(request)

    async def scenario():
        async with ScriptedPeer(respond) as peer:
            connection = await BrokerConnection.open("127.0.0.1", peer.port)
            await connection.send_without_response(ApiKey.PRODUCE, {
                "acks": 0, "timeout_ms": 1000,
                "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b""}]}]})
            body = await connection.request(ApiKey.METADATA, {"topics": [{"name": "after"}]})
            connection.close()
            return body.topics[0].name, [r.api_key for r in peer.requests]
    name, keys = run(scenario())
    assert name == "after"
    assert keys == [ApiKey.API_VERSIONS, ApiKey.PRODUCE, ApiKey.METADATA]


def test_connecting_to_a_closed_port_is_a_connection_error():
    async def scenario():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(BrokerConnectionError, match="cannot connect"):
            await BrokerConnection.open("127.0.0.1", port, connect_timeout_s=2)
    run(scenario())


def test_negotiation_fails_when_ranges_do_not_meet():
    assert negotiate_version(ApiKey.FETCH, (4, 11), (0, 16)) == 11
    assert negotiate_version(ApiKey.FETCH, (4, 11), (4, 6)) == 6
    with pytest.raises(KafkaError) as raised:
        negotiate_version(ApiKey.PRODUCE, (3, 7), (0, 2))
    assert raised.value.error_code == ErrorCode.UNSUPPORTED_VERSION
    with pytest.raises(KafkaError):
        negotiate_version(ApiKey.PRODUCE, (3, 7), None)


def test_bootstrap_servers_parse_hosts_ports_and_ipv6():
    assert parse_bootstrap_servers("a:1, b ,[::1]:9093") == [("a", 1), ("b", 9092), ("::1", 9093)]
    assert parse_bootstrap_servers(["h:19092"]) == [("h", 19092)]
    with pytest.raises(ValueError):
        parse_bootstrap_servers("h:port")
    with pytest.raises(ValueError):
        parse_bootstrap_servers(" , ")

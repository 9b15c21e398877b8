"""One TCP connection to one broker: framing, correlation ids, pipelining.

Wire format (Kafka protocol guide, "Requests and Responses")::

    request  = i32 size | request header (api_key, api_version,
               correlation_id, client_id[, tagged fields]) | body
    response = i32 size | i32 correlation_id[ | tagged fields] | body

A broker answers the requests of one connection in the order they came, so
requests are pipelined: each ``request()`` writes its frame at once and
waits for its own answer, which is the next one in the queue of pending
requests. The correlation id of each answer is checked against that queue;
a mismatch means the stream is lost and closes the connection.

On connect the client sends ApiVersions (v3, falling back to the v0 body a
broker sends with UNSUPPORTED_VERSION, KIP-511) and afterwards uses, per
api key, the highest version both sides support (``version_for``). With a
``ClientSecurity`` (client/security.py) the connection is TLS and/or
authenticates with SASL right after ApiVersions. When the broker answers
a session lifetime (KIP-368, its ``connections.max.reauth.ms``), the
connection re-authenticates at REAUTH_FRACTION of it; meanwhile other
requests wait, since a broker closes a connection that sends anything but
SaslAuthenticate during an exchange.
"""
from __future__ import annotations

import asyncio
import itertools
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import kcore
from kcore import protocol
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.security import ClientSecurity
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.protocol.exceptions import ProtocolError
from kcore.protocol.framing import FrameReader, FrameSizeError
from kcore.security.scram import AuthenticationFailed, ScramClient

__all__ = ["BrokerConnection", "CLIENT_MIN_VERSIONS", "client_versions", "negotiate_version"]

# Below these versions the api cannot carry what the client needs: Produce 3
# and Fetch 4 are the first with RecordBatch v2, ListOffsets 1 the first that
# returns one offset per timestamp instead of a list.
CLIENT_MIN_VERSIONS = {ApiKey.PRODUCE: 3, ApiKey.FETCH: 4, ApiKey.LIST_OFFSETS: 1}
# Above these the request has another shape than the client writes:
# OffsetFetch v8 asks for a list of groups (the client asks for one);
# Fetch v13 and OffsetCommit v10 name topics by id (the client names them).
CLIENT_MAX_VERSIONS = {ApiKey.OFFSET_FETCH: 7, ApiKey.FETCH: 12, ApiKey.OFFSET_COMMIT: 9}
# ApiVersions v3 is the first that sends the client's name and version.
API_VERSIONS_VERSION = 3
CLIENT_SOFTWARE_NAME = "kcore"

_SIZE = struct.Struct(">i")
# Largest response accepted: far above any fetch (fetch.max.bytes is 50 MiB
# by default), low enough that a garbled size prefix cannot make the client
# allocate gigabytes.
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
_CORRELATION_AND_ERROR = struct.Struct(">ih")
# Re-authenticate at 90% of the session lifetime, as librdkafka does (the
# Java client picks 85-95% at random): a round trip or two of margin.
REAUTH_FRACTION = 0.9


def client_versions() -> dict[int, tuple[int, int]]:
    """Version ranges this client can encode, per api key."""
    ranges = {}
    for api_key, (low, high) in protocol.supported_versions().items():
        low = max(low, CLIENT_MIN_VERSIONS.get(api_key, low))
        high = min(high, CLIENT_MAX_VERSIONS.get(api_key, high))
        if low <= high:
            ranges[int(api_key)] = (low, high)
    return ranges


def negotiate_version(api_key: int, ours: tuple[int, int] | None,
                      theirs: tuple[int, int] | None) -> int:
    """The highest version in both ranges; UNSUPPORTED_VERSION when they do not meet."""
    if ours is None or theirs is None or max(ours[0], theirs[0]) > min(ours[1], theirs[1]):
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         f"no common version for {_api_name(api_key)}: client {ours}, "
                         f"broker {theirs}")
    return min(ours[1], theirs[1])


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


class _Pending:
    __slots__ = ("correlation_id", "api_key", "api_version", "future")

    def __init__(self, correlation_id: int, api_key: int, api_version: int,
                 future: asyncio.Future) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.future = future


class BrokerConnection(asyncio.BufferedProtocol):
    """A connection to one broker (see the module doc).

    Concurrency contract: owned by the event loop that opened it. Any number
    of coroutines may call ``request()`` at once; frames go out in call
    order and each caller gets its own response. A request that times out
    closes the connection (later answers could not be matched any more) and
    fails every other pending request with BrokerConnectionError.
    """

    def __init__(self, host: str, port: int, *, client_id: str = "kcore",
                 request_timeout_s: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._client_versions = client_versions()
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Pending] = deque()
        self._correlation_ids = itertools.count(1)
        # Large responses (a follower's fetch: megabytes) are received
        # straight into a buffer of their own (protocol/framing.py).
        self._frames = FrameReader(MAX_RESPONSE_BYTES)
        self._write_ready = asyncio.Event()
        self._write_ready.set()
        # Cleared while a re-authentication runs: only its requests go out.
        self._session_open = asyncio.Event()
        self._session_open.set()
        self._session_lifetime_ms = 0
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task | None = None
        self._closed_error: BrokerConnectionError | None = None
        self._lost = asyncio.get_running_loop().create_future()
        self.on_close: Callable[[BrokerConnection], None] | None = None

    # ------------------------------------------------------------ opening

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str = "kcore",
                   request_timeout_s: float = 30.0,
                   connect_timeout_s: float = 10.0,
                   security: ClientSecurity | None = None) -> BrokerConnection:
        """Connect, negotiate api versions and, if asked, authenticate."""
        loop = asyncio.get_running_loop()
        connection = cls(host, port, client_id=client_id, request_timeout_s=request_timeout_s)
        context = security.ssl_context if security is not None else None
        try:
            async with asyncio.timeout(connect_timeout_s):
                await loop.create_connection(lambda: connection, host, port, ssl=context,
                                             server_hostname=host if context is not None else None)
        except (OSError, TimeoutError) as exc:
            raise BrokerConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
        try:
            await connection._negotiate_versions()
            if security is not None and security.uses_sasl:
                await connection._authenticate(security)
        except BaseException:
            connection.close()
            raise
        return connection

    async def _negotiate_versions(self) -> None:
        ours = self._client_versions.get(ApiKey.API_VERSIONS, (0, 0))
        version = min(API_VERSIONS_VERSION, ours[1])
        body = {"client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": kcore.__version__}
        response = await self.request(ApiKey.API_VERSIONS, body, version=version)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            response = await self.request(ApiKey.API_VERSIONS, {}, version=0)
        if response.error_code:
            raise KafkaError(response.error_code, context=f"ApiVersions to {self.address}")
        self.broker_versions = {entry.api_key: (entry.min_version, entry.max_version)
                                for entry in response.api_keys}

    async def _authenticate(self, security: ClientSecurity) -> None:
        await self._sasl_exchange(security)
        if self._session_lifetime_ms > 0:
            delay_s = self._session_lifetime_ms * REAUTH_FRACTION / 1000
            self._reauth_timer = asyncio.get_running_loop().call_later(
                delay_s, self._begin_reauthentication, security)

    def _begin_reauthentication(self, security: ClientSecurity) -> None:
        self._reauth_timer = None
        if not self.closed:
            self._session_open.clear()
            self._reauth_task = asyncio.get_running_loop().create_task(self._reauthenticate(security))

    async def _reauthenticate(self, security: ClientSecurity) -> None:
        try:
            await self._authenticate(security)
        except (KafkaError, BrokerConnectionError) as exc:
            self._fail(BrokerConnectionError(f"re-authentication at {self.address} failed: {exc}"))
        finally:
            self._session_open.set()

    async def _sasl_exchange(self, security: ClientSecurity) -> None:
        mechanism = security.sasl_mechanism
        handshake = await self._request(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism}, 1, None,
                                        gated=False)
        if handshake.error_code:
            raise KafkaError(handshake.error_code, context=f"SASL {mechanism} at {self.address} "
                             f"(broker offers {', '.join(handshake.mechanisms)})")
        assert security.username is not None and security.password is not None
        if mechanism == "PLAIN":
            await self._sasl_token(f"\0{security.username}\0{security.password}".encode())
            return
        scram = ScramClient(mechanism, security.username, security.password)
        server_first = await self._sasl_token(scram.first())
        try:
            scram.verify(await self._sasl_token(scram.final(server_first)))
        except AuthenticationFailed as exc:
            raise KafkaError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None

    async def _sasl_token(self, token: bytes) -> bytes:
        response = await self._request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token}, None, None,
                                       gated=False)
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message or "",
                             context=f"SaslAuthenticate at {self.address}")
        self._session_lifetime_ms = getattr(response, "session_lifetime_ms", 0)  # v1+
        return bytes(response.auth_bytes)

    # ------------------------------------------------------------ requests

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` that the broker and this client support."""
        return negotiate_version(api_key, self._client_versions.get(int(api_key)),
                                 self.broker_versions.get(int(api_key)))

    async def request(self, api_key: int, body: Any, *, version: int | None = None,
                      timeout_s: float | None = None) -> Any:
        """Send one request and return the decoded response body."""
        return await self._request(api_key, body, version, timeout_s, gated=True)

    async def _request(self, api_key: int, body: Any, version: int | None, timeout_s: float | None,
                       gated: bool) -> Any:
        future = await self._send(api_key, body, version, expect_response=True, gated=gated)
        assert future is not None  # expect_response=True always makes one
        timeout_s = self.request_timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(future)
        except TimeoutError:
            error = BrokerConnectionError(
                f"{_api_name(api_key)} to {self.address} got no answer in {timeout_s:g}s")
            self._fail(error)
            raise self._closed_error or error from None

    async def send_without_response(self, api_key: int, body: Any, *,
                                    version: int | None = None) -> None:
        """Send a request the broker does not answer (Produce with acks=0)."""
        await self._send(api_key, body, version, expect_response=False, gated=True)

    async def _send(self, api_key: int, body: Any, version: int | None,
                    expect_response: bool, gated: bool) -> asyncio.Future | None:
        """Write one frame once the transport takes writes and (``gated``)
        no re-authentication runs; nothing awaits between that check and
        the write, so no frame slips into an exchange."""
        if version is None:
            version = self.version_for(api_key)
        while not self.closed:
            if not self._write_ready.is_set():
                await self._write_ready.wait()
            elif gated and not self._session_open.is_set():
                await self._session_open.wait()
            else:
                break
        if self._closed_error is not None:
            raise self._closed_error
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        frame = protocol.encode_request(api_key, version, correlation_id, self.client_id, body)
        future = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending.append(_Pending(correlation_id, int(api_key), version, future))
        assert self._transport is not None  # _write_ready is set once connected
        self._transport.write(frame)
        return future

    def close(self) -> None:
        """Close now; bytes already written still go out (see ``wait_closed``)."""
        self._fail(BrokerConnectionError(f"connection to {self.address} closed"))

    async def wait_closed(self) -> None:
        """Wait until the socket is closed, i.e. the write buffer has been flushed."""
        await asyncio.shield(self._lost)

    # ------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # a stream connection

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._lost.done():
            self._lost.set_result(None)
        reason = f": {exc}" if exc else ""
        self._fail(BrokerConnectionError(f"connection to {self.address} lost{reason}"))

    def pause_writing(self) -> None:
        self._write_ready.clear()

    def resume_writing(self) -> None:
        self._write_ready.set()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            frames = self._frames.buffer_updated(nbytes)
        except FrameSizeError as exc:
            self._fail(BrokerConnectionError(f"{self.address} sent a bad frame: {exc}"))
            return
        for frame in frames:
            if len(frame) < 4:
                self._fail(BrokerConnectionError(
                    f"{self.address} sent a frame of {len(frame)} bytes"))
                return
            self._complete(frame)
            if self.closed:
                return

    def _complete(self, frame: bytearray | memoryview) -> None:
        if not self._pending:
            self._fail(BrokerConnectionError(f"{self.address} sent an unrequested response"))
            return
        pending = self._pending[0]
        (correlation_id,) = _SIZE.unpack_from(frame, 0)
        if correlation_id != pending.correlation_id:
            self._fail(BrokerConnectionError(
                f"{self.address} answered correlation id {correlation_id}, expected "
                f"{pending.correlation_id}"))
            return
        self._pending.popleft()
        try:
            body = self._decode(pending, frame)
        except ProtocolError as exc:
            if not pending.future.done():
                pending.future.set_exception(BrokerConnectionError(
                    f"undecodable {_api_name(pending.api_key)} v{pending.api_version} "
                    f"response from {self.address}: {exc}"))
                pending.future.exception()  # retrieved: the caller may have given up
            return
        if not pending.future.done():
            pending.future.set_result(body)

    @staticmethod
    def _decode(pending: _Pending, frame: bytearray | memoryview) -> Any:
        version = pending.api_version
        if pending.api_key == ApiKey.API_VERSIONS and version > 0 and len(frame) >= 6:
            # KIP-511: an unsupported ApiVersions version is answered in v0 format.
            _, error_code = _CORRELATION_AND_ERROR.unpack_from(frame, 0)
            if error_code == ErrorCode.UNSUPPORTED_VERSION:
                version = 0
        _, body = protocol.decode_response(pending.api_key, version, frame)
        return body

    def _fail(self, error: BrokerConnectionError) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = error
        self._write_ready.set()
        self._session_open.set()
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        while self._pending:
            future = self._pending.popleft().future
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: a caller that gave up must not log it
        if self._transport is not None:
            self._transport.close()
        elif not self._lost.done():
            self._lost.set_result(None)
        if self.on_close is not None:
            self.on_close(self)

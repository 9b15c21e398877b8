"""One client connection: 4-byte framing, in-order responses, zero-copy fetch.

Frames are `i32 size | request`. Requests are decoded as they arrive and
handled concurrently (a long-polling fetch does not block the produce behind
it), but responses leave in request order, as clients require (kafka-python
checks correlation ids). A size prefix that is negative or larger than
`socket.request.max.bytes`, an unknown API key, an unsupported version (other
than ApiVersions, which gets its KIP-511 error reply) or an undecodable body
closes this connection only.

Response chunks are bytes or file slices (anything with fd/position/size).
Slices go out by sendfile(2) on the socket once the transport's own buffer is
empty, so record bytes never pass through Python; uvloop has no
loop.sendfile, hence the native kernel (docs/architecture.md#fetch-path).
Slices of at most INLINE_SLICE_BYTES are the exception: read with pread,
they leave with the rest of their response in one write.
On a TLS connection the kernel cannot encrypt (no kTLS here), so slices are
read with pread in FILE_CHUNK_BYTES pieces and written through the TLS
transport instead.

On a SASL listener the connection runs the SASL exchange (server/sasl.py)
before it dispatches anything but ApiVersions; once it completes the
connection is a plain one again, with one ``is None`` test per frame (two
when sessions expire: a SaslHandshake then starts a re-authentication,
any other request past the expiry closes the connection).
Responses in memory that are ready together leave in one writev: a client
pipelining requests (librdkafka keeps up to 5 produce requests in flight)
has ~2.5 answered per read, and each send on loopback costs ~15 us. Those
ready when the read callback that decoded them ends (Produce and Fetch
handlers that did not wait, server/eager.py) leave from that callback when
the sender is idle; the sender, a task, writes the rest in order.

Not thread-safe: owned by the event loop that accepted it.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeGuard

from kcore import protocol
from kcore._native.sendfile import sendfile
from kcore.handlers.base import CloseConnection
from kcore.metrics.socket_server import SocketServerStats
from kcore.protocol.framing import FrameReader, FrameSizeError
from kcore.server import eager
from kcore.server.sasl import (
    SASL_SERVER_MAX_RECEIVE_SIZE,
    AuthFailures,
    SaslAuthenticator,
    SaslSettings,
    SaslState,
    Session,
)
from kcore.server.security import tls_principal

log = logging.getLogger(__name__)

# The name of a task handling one request (see _abandon).
REQUEST_TASK = "kcore-request"
# Handlers started in the callback that read their request (server/eager.py):
# a task took a few us of a produce request's 35-40 us of broker CPU here
# (docs/performance.md). On Python 3.11 their first step must not need a
# current task (asyncio.timeout).
EAGER_APIS = frozenset({protocol.ApiKey.PRODUCE, protocol.ApiKey.FETCH})

# Reading pauses while this many responses are pending on one connection
# (queued.max.requests, whose default this is).
MAX_IN_FLIGHT = 500
IN_MEMORY = (bytes, bytearray, memoryview)  # response chunks written as they are
# A file slice on a TLS connection is copied in pieces of this size: 256 KiB
# keeps a 1 MiB fetch to 4 reads while the transport buffers at most
# TLS_BUFFER_BYTES of plaintext per connection.
FILE_CHUNK_BYTES = 256 * 1024
TLS_BUFFER_BYTES = 1024 * 1024
# A file slice up to this size is read with pread and leaves with the rest
# of its response in one writev. A sendfile per slice sends a TCP segment
# per slice: a fetch answered as data trickles in (16 partitions, a few
# KiB each) went out as ~33 sends, and on loopback each send also pays for
# the receiver's side (~15 us). Copying 32 KiB costs ~3 us; above that,
# sendfile's zero-copy wins.
INLINE_SLICE_BYTES = 32 * 1024
# A larger slice is probed for pages missing from the page cache, one byte
# every COLD_PROBE_BYTES with RWF_NOWAIT (~1 us each). sendfile of pages on
# disk blocks the event loop for the disk read, and with it every produce
# and fetch of every connection: a consumer catching up from disk raised a
# producer's p99 from 15 to 257 ms (bench/bench_backlog.py). Such a slice
# is read by a worker thread and written from memory instead.
COLD_PROBE_BYTES = 128 * 1024
COLD_READ_THREADS = 4
COLD_READ_AHEAD_BYTES = 1024 * 1024
# Kafka's KafkaChannel starts at most one re-authentication a second; a
# SaslHandshake sooner goes to its handler (ILLEGAL_SASL_STATE).
MIN_REAUTH_INTERVAL_S = 1.0


class ConnectionContext:
    """What a handler may know of the connection a request came on."""

    __slots__ = ("peer", "listener", "principal", "connection_id", "mute_ms")

    def __init__(self, peer: Any, listener: str, connection_id: int):
        self.peer = peer
        self.listener = listener
        self.principal = "User:ANONYMOUS"
        self.connection_id = connection_id
        # A quota's throttle time: set by a handler, the connection stops
        # reading this long once the response is out (KIP-219).
        self.mute_ms = 0


Dispatch = Callable[[ConnectionContext, Any], Awaitable[Any]]
# (context, request, request size in bytes, seconds to its response body,
# the body or None): called once per answered request (metrics, debug log).
Observe = Callable[[ConnectionContext, Any, int, float, Any], None]


class KafkaConnection(asyncio.BufferedProtocol):
    """asyncio protocol for one Kafka client connection (see module doc)."""

    def __init__(self, dispatch: Dispatch, listener: str, max_request_bytes: int,
                 connection_id: int, on_close: Callable[[KafkaConnection], None],
                 observe: Observe | None = None,
                 sasl: tuple[SaslSettings, AuthFailures] | None = None,
                 max_in_flight: int = MAX_IN_FLIGHT,
                 socket_stats: SocketServerStats | None = None):
        self._dispatch = dispatch
        self._max_in_flight = max_in_flight
        # When bytes last came in or went out (connections.max.idle.ms).
        self.last_active = time.monotonic()
        self._max_request_bytes = max_request_bytes
        self._sasl_config = sasl
        self._sasl: SaslAuthenticator | None = None  # set until the exchange completes
        self._session: Session | None = None  # a completed exchange whose session expires
        self._reauth_started = -MIN_REAUTH_INTERVAL_S
        self._socket_stats = socket_stats or SocketServerStats()
        self._host = ""
        self._close_after: asyncio.Future | None = None  # the answer to send before closing
        self._tls = False
        self._observe = observe
        self.listener = listener
        self._connection_id = connection_id
        self._on_close = on_close
        self._frames = FrameReader(max_request_bytes)
        self._transport: asyncio.Transport | None = None
        self._context: ConnectionContext | None = None
        self._pending: deque[asyncio.Future] = deque()
        self._wakeup: asyncio.Future | None = None
        self._reading = False  # in buffer_updated: wake-ups wait for its end
        self._wake_due = False
        self._drained: asyncio.Future | None = None
        self._sender: asyncio.Task | None = None
        self._awaiting: asyncio.Future | None = None  # the answer the sender waits for
        self._reading_paused = False
        self._muted: asyncio.TimerHandle | None = None  # quota throttle: reading resumes then
        # Requests read before a mute took effect wait in it, then go one at a
        # time (Kafka reads a throttled channel's requests one by one).
        self._held: deque[bytes] = deque()
        self._closed = False
        self._cancel_on_close = False  # set by shutdown(): the broker stops, nothing runs on
        self._sock_fd = -1
        self._poll_fd = -1

    # Both are set by connection_made, before any data can arrive.
    @property
    def _open_transport(self) -> asyncio.Transport:
        assert self._transport is not None
        return self._transport

    @property
    def _open_context(self) -> ConnectionContext:
        assert self._context is not None
        return self._context

    # -- asyncio callbacks -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        self._sock_fd = sock.fileno() if sock is not None else -1
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        self._context = ConnectionContext(peer, self.listener, self._connection_id)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self._tls = True
            self._context.principal = tls_principal(ssl_object) or self._context.principal
        if self._sasl_config is not None:
            self._host = peer[0] if isinstance(peer, tuple) else str(peer)
            self._sasl = SaslAuthenticator(*self._sasl_config, self._host)
            self._frames.max_frame_bytes = min(self._max_request_bytes, SASL_SERVER_MAX_RECEIVE_SIZE)
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self._frames.buffer_updated(nbytes)
        except FrameSizeError as exc:
            self._reject(str(exc))
            return
        self._reading = True
        try:
            for frame in frames:
                if self._closed:
                    break
                if self._sasl is None:
                    self._accept_frame(frame)
                else:
                    self._accept_sasl_frame(frame)
        finally:
            self._reading = False
            if self._wake_due:
                self._wake_due = False
                self._send_ready()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._muted is not None:
            self._muted.cancel()
            self._muted = None
        # Cancelling the sender would cancel the request it awaits too.
        sender_waits = _is_request(self._awaiting) and not self._awaiting.done() \
            and not self._cancel_on_close
        for future in self._pending:
            self._abandon(future)
        self._pending.clear()
        self._wake_sender()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._sender is not None and not sender_waits:
            self._sender.cancel()
        self._release_poll_fd()
        self._on_close(self)

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- requests ------------------------------------------------------------
    def _accept_frame(self, frame: bytearray | memoryview) -> None:
        """Decode one request and queue its response slot in arrival order."""
        if self._muted is not None or self._held:
            self._held.append(bytes(frame))
            return
        self._dispatch_frame(frame)

    def _dispatch_frame(self, frame: bytearray | memoryview | bytes) -> None:
        if self._session is not None and self._session_frame(frame):
            return
        request = self._decode(frame)
        if request is not None:
            self._queue_request(request, len(frame))

    def _decode(self, frame: bytearray | memoryview | bytes):
        """The request, or None once the frame is answered or the connection
        is closing."""
        try:
            request = protocol.decode_request(memoryview(frame))
        except protocol.UnsupportedVersionError as exc:
            if exc.header.api_key == protocol.ApiKey.API_VERSIONS:
                self._queue_ready(protocol.api_versions_error_response(exc.header))
                return None
            self._reject(f"unsupported version {exc.header.api_version} of API {exc.header.api_key}")
        except protocol.UnknownApiKeyError as exc:
            self._reject(f"unknown API key {exc.header.api_key}")
        except protocol.ProtocolDecodeError as exc:
            self._reject(f"malformed request: {exc}")
        else:
            if request.trailing_bytes:
                self._socket_stats.trailing_bytes(self.listener, request.api_key)
                log.debug("connection %d: %d bytes after the last field of API %d v%d ignored", self._connection_id,
                          request.trailing_bytes, request.api_key, request.api_version)
            return request
        return None

    def _queue_request(self, request, size: int) -> None:
        loop = asyncio.get_running_loop()
        if request.api_key in EAGER_APIS:
            future = eager.start(loop, self._handle(request, size), REQUEST_TASK)
        else:
            future = loop.create_task(self._handle(request, size), name=REQUEST_TASK)
        self._pending.append(future)
        self._wake_sender()
        if len(self._pending) >= self._max_in_flight and not self._reading_paused:
            self._reading_paused = True
            if self._muted is None:
                self._open_transport.pause_reading()

    async def _handle(self, request, size: int) -> list | None:
        if self._observe is None:
            body = await self._dispatch(self._open_context, request)
        else:
            started = time.perf_counter()
            body = await self._dispatch(self._open_context, request)
            self._observe(self._open_context, request, size, time.perf_counter() - started, body)
        if body is None:  # acks=0 produce: no response at all
            return None
        return protocol.encode_response(request.header, body)

    def _queue_ready(self, chunks: list) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        future.set_result(chunks)
        self._pending.append(future)
        self._wake_sender()
        return future

    # -- SASL, before the exchange completes -----------------------------------
    def _accept_sasl_frame(self, frame: bytearray | memoryview | bytes) -> None:
        sasl = self._sasl
        assert sasl is not None
        loop = asyncio.get_running_loop()
        if sasl.state is SaslState.RAW:
            self._pending.append(loop.create_task(self._raw_sasl_token(bytes(frame))))
            self._wake_sender()
            return
        request = self._decode(frame)
        if request is None:
            return
        if not sasl.allows(request.api_key):
            self._reject(f"API {request.api_key} (state {sasl.state.value}) before SASL "
                         "authentication completed")
            return
        if request.api_key == protocol.ApiKey.SASL_HANDSHAKE:
            body, close = sasl.handshake(request.api_version, request.body.mechanism)
            answered = self._queue_ready(protocol.encode_response(request.header, body))
            if close:
                self._close_after = answered
                self._count_failure(sasl)
        elif request.api_key == protocol.ApiKey.SASL_AUTHENTICATE:
            self._pending.append(loop.create_task(self._sasl_authenticate(request)))
            self._wake_sender()
        else:
            self._queue_request(request, len(frame))

    def _session_frame(self, frame: bytearray | memoryview | bytes) -> bool:
        """KIP-368 on a connection whose session expires: whether ``frame``
        was taken here (a SaslHandshake that starts a re-authentication, or
        any request once the session expired, which closes the connection).
        Costs ~0.5 us a request (timeit, 1M frames, a shared machine), paid
        only where sessions expire."""
        session = self._session
        assert session is not None and self._sasl_config is not None
        api_key = struct.unpack_from(">h", frame)[0] if len(frame) >= 2 else -1
        now = time.monotonic()
        if api_key == protocol.ApiKey.SASL_HANDSHAKE and now - self._reauth_started >= MIN_REAUTH_INTERVAL_S:
            self._reauth_started = now
            self._sasl = SaslAuthenticator(*self._sasl_config, self._host, previous=session)
            self._frames.max_frame_bytes = min(self._max_request_bytes, SASL_SERVER_MAX_RECEIVE_SIZE)
            self._accept_sasl_frame(frame)
            return True
        if session.expired(now):
            self._socket_stats.expired_connection_killed(self.listener)
            self._reject(f"SASL session of User:{session.user} expired without re-authentication")
            return True
        return False

    async def _sasl_authenticate(self, request) -> list:
        assert self._sasl is not None
        answer, failure = await self._sasl.authenticate(request.body.auth_bytes)
        if failure is not None:
            log.info("authentication failed for %s: %s", self._open_context.peer, failure)
            self._count_failure(self._sasl)
            self._close_after = asyncio.current_task()
            body = {"error_code": protocol.ErrorCode.SASL_AUTHENTICATION_FAILED,
                    "error_message": failure, "auth_bytes": b"", "session_lifetime_ms": 0}
        else:
            lifetime_ms = self._sasl.session_lifetime_ms
            self._maybe_authenticated()
            body = {"error_code": protocol.ErrorCode.NONE, "error_message": None,
                    "auth_bytes": answer, "session_lifetime_ms": lifetime_ms}
        return protocol.encode_response(request.header, body)

    async def _raw_sasl_token(self, token: bytes) -> list | None:
        """SaslHandshake v0: a bare token in, a bare token out; a failure can
        only be told by closing."""
        assert self._sasl is not None
        answer, failure = await self._sasl.authenticate(token)
        if failure is not None:
            log.info("authentication failed for %s: %s", self._open_context.peer, failure)
            self._count_failure(self._sasl)
            self.close()
            return None
        self._maybe_authenticated()
        return [struct.pack(">i", len(answer)), answer]

    def _maybe_authenticated(self) -> None:
        sasl = self._sasl
        if sasl is not None and sasl.complete:
            self._open_context.principal = f"User:{sasl.user}"
            self._frames.max_frame_bytes = self._max_request_bytes
            session = sasl.session
            self._session = session if session is not None and session.expires is not None else None
            self._sasl = None
            if sasl.previous is not None:
                latency_ms = (time.monotonic() - self._reauth_started) * 1000
                self._socket_stats.reauthenticated(self.listener, latency_ms)

    def _count_failure(self, sasl: SaslAuthenticator) -> None:
        if sasl.previous is not None:
            self._socket_stats.reauthentication_failed(self.listener)

    def _reject(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self._open_context.peer, reason)
        self.close()

    # -- sending -----------------------------------------------------------
    def _wake_sender(self) -> None:
        if self._reading:  # the read callback sends what is ready when it ends
            self._wake_due = True
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _send_ready(self) -> None:
        """At the end of a read callback: the answers at the head of the
        queue that are ready (eager handlers that did not wait) leave now,
        in one write, when the sender is idle; the rest wakes the sender.
        Waking it for them cost a future and a task step per read: ~4% of
        a fetch's broker CPU with one request in flight (bench_requests
        --in-flight 1, docs/performance.md)."""
        if self._sender_idle():
            queued = len(self._pending)
            chunks = self._with_ready_responses([])
            if chunks:
                self._open_transport.writelines(chunks)
                self.last_active = time.monotonic()
            if len(self._pending) < queued:  # acks=0 produces answer nothing, and count
                self._answered()
        if self._pending and self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _sender_idle(self) -> bool:
        """The sender waits for work, has nothing buffered and nothing
        holds the answers back (a mute, held requests, a close to follow)."""
        return (self._wakeup is not None and not self._wakeup.done() and not self._closed
                and self._muted is None and not self._held and self._close_after is None
                and self._open_transport.get_write_buffer_size() == 0)

    def _answered(self) -> None:
        """After an answer left: the client's throttle (KIP-219), the next
        held request, reading resumed once the queue is short again."""
        context = self._open_context
        if context.mute_ms > 0:
            self._mute(context.mute_ms)
            context.mute_ms = 0
        elif self._held and self._muted is None and not self._pending:
            self._release_held()
        if self._reading_paused and len(self._pending) < self._max_in_flight // 2:
            self._reading_paused = False
            if self._muted is None:
                self._open_transport.resume_reading()

    async def _send_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._closed:
                if not self._pending:
                    self._wakeup = loop.create_future()
                    await self._wakeup
                    continue
                future = self._pending[0]
                self._awaiting = future
                try:
                    chunks = await future
                except asyncio.CancelledError:
                    raise
                except CloseConnection as exc:
                    log.info("closing connection %s: %s", self._open_context.peer, exc)
                    self.close()
                    return
                except Exception:
                    if not self.is_closed():  # else _drop_answer logs it
                        log.exception("handler failed; closing connection %s", self._open_context.peer)
                    self.close()
                    return
                finally:
                    self._awaiting = None
                if self.is_closed():  # the client went away while its request ran
                    return
                self._pending.popleft()
                if chunks is not None:
                    chunks = _inline_small_slices(chunks)
                    if all(isinstance(chunk, IN_MEMORY) for chunk in chunks):
                        chunks = self._with_ready_responses(chunks)
                    await self._write_chunks(chunks)
                    self.last_active = time.monotonic()
                if future is self._close_after:  # a refused authentication, once answered
                    self.close()
                    return
                self._answered()
        except asyncio.CancelledError:
            pass
        except OSError as exc:
            log.info("connection %s failed while sending: %s", self._open_context.peer, exc)
            self.close()

    def _mute(self, throttle_ms: int) -> None:
        """Stop reading requests for ``throttle_ms`` (Kafka mutes the
        channel of a throttled client once its response is sent)."""
        if self._closed:
            return
        if self._muted is not None:
            self._muted.cancel()
        elif not self._reading_paused:
            self._open_transport.pause_reading()
        self._muted = asyncio.get_running_loop().call_later(throttle_ms / 1000, self._unmute)

    def _unmute(self) -> None:
        self._muted = None
        if self._held:
            if not self._pending:
                self._release_held()
        elif not self._closed and not self._reading_paused:
            self._open_transport.resume_reading()

    def _release_held(self) -> None:
        """The next request read while muted; reading resumes once none is
        left (the send loop releases the next after each answer)."""
        if self._closed:
            return
        self._dispatch_frame(self._held.popleft())
        if not self._held and not self._reading_paused:
            self._open_transport.resume_reading()

    def _with_ready_responses(self, chunks: list) -> list:
        """Append the bytes of the responses queued behind this one that
        are complete already, so they leave in one write (a syscall whose
        loopback delivery costs ~15 us): a client with 5 requests in flight
        often gets several answered in one event-loop turn."""
        pending = self._pending
        while pending:
            future = pending[0]
            if not future.done() or future.cancelled() or future.exception() is not None:
                break
            more = future.result()
            if more is not None:
                more = _in_memory(more)
                if more is None:
                    break  # file slices go out by sendfile, in order, on the next turn
            pending.popleft()
            if more is not None:
                chunks.extend(more)
        return chunks

    async def _write_chunks(self, chunks: list) -> None:
        transport = self._open_transport
        in_memory: list = []  # consecutive bytes chunks leave in one writev
        read_ahead = False
        for index, chunk in enumerate(chunks):
            if self._closed:
                return
            if isinstance(chunk, IN_MEMORY):
                in_memory.append(chunk)
                continue
            if in_memory:
                transport.writelines(in_memory)
                in_memory = []
            cold = chunk.size > 0 and not _cached(chunk.fd, chunk.position, chunk.size)
            if cold and not read_ahead:
                read_ahead = True
                _cold_reader().submit(_read_ahead_slices, chunks[index + 1:])
            await self._send_file_slice(chunk.fd, chunk.position, chunk.size, cold)
        if in_memory and not self._closed:
            transport.writelines(in_memory)
        if transport.get_write_buffer_size() > 4 * 1024 * 1024:
            await self._wait_drained()

    async def _wait_drained(self, low: int = 0) -> None:
        while not self._closed and self._open_transport.get_write_buffer_size() > low:
            self._drained = asyncio.get_running_loop().create_future()
            # high=low makes the transport call pause_writing/resume_writing, and
            # resume comes once the buffer is down to low (empty for low=0).
            self._open_transport.set_write_buffer_limits(high=low, low=low)
            try:
                await self._drained
            finally:
                self._open_transport.set_write_buffer_limits()

    async def _send_file_slice(self, fd: int, position: int, size: int, cold: bool) -> None:
        if size <= 0:
            return
        if cold:
            self._socket_stats.cold_read(size)
        if self._tls or cold:
            await self._copy_file_slice(fd, position, size, in_thread=cold)
            return
        await self._wait_drained()
        waited = False
        while size > 0 and not self._closed:
            sent = sendfile(self._sock_fd, fd, position, size)
            if sent == 0 and waited:
                # Writable socket yet nothing sent: the segment ended before
                # the slice did (truncated under us). The frame size is
                # already on the wire, so only closing keeps the stream sane.
                log.warning("segment shrank during fetch; closing %s", self._open_context.peer)
                self.close()
                return
            position += sent
            size -= sent
            waited = False
            if size > 0:
                await self._wait_writable()
                waited = True

    async def _copy_file_slice(self, fd: int, position: int, size: int, in_thread: bool) -> None:
        """The slice through Python, in bounded pieces: on TLS, and where
        its pages are on disk (read by a worker thread then)."""
        transport = self._open_transport
        loop = asyncio.get_running_loop()
        while size > 0 and not self._closed:
            length = min(size, FILE_CHUNK_BYTES)
            chunk = (await loop.run_in_executor(_cold_reader(), _read_cold, fd, length, position)
                     if in_thread else os.pread(fd, length, position))
            if not chunk:
                log.warning("segment shrank during fetch; closing %s", self._open_context.peer)
                self.close()
                return
            transport.write(chunk)
            position += len(chunk)
            size -= len(chunk)
            if transport.get_write_buffer_size() > TLS_BUFFER_BYTES:
                await self._wait_drained(TLS_BUFFER_BYTES // 4)

    async def _wait_writable(self) -> None:
        # The transport owns the socket fd in the loop's poller; a dup() of it
        # has its own registration, so waiting on it does not disturb the
        # transport.
        loop = asyncio.get_running_loop()
        if self._poll_fd < 0:
            self._poll_fd = os.dup(self._sock_fd)
        future = loop.create_future()
        def writable() -> None:
            if not future.done():
                future.set_result(None)

        loop.add_writer(self._poll_fd, writable)
        try:
            await future
        finally:
            loop.remove_writer(self._poll_fd)

    def _release_poll_fd(self) -> None:
        if self._poll_fd >= 0:
            try:
                asyncio.get_event_loop().remove_writer(self._poll_fd)
            except Exception:
                pass
            os.close(self._poll_fd)
            self._poll_fd = -1

    def idle_s(self, now: float) -> float:
        """Seconds without traffic; 0 while a request waits for its answer
        (a long-poll fetch is not idleness)."""
        return 0.0 if self._pending else now - self.last_active

    def close(self) -> None:
        if not self._closed and self._transport is not None:
            self._closed = True
            self._transport.close()

    def is_closed(self) -> bool:
        return self._closed

    def shutdown(self) -> None:
        """Close for a stopping broker: requests still being handled are
        cancelled, as the logs they would touch are closed next."""
        self._cancel_on_close = True
        self.close()

    def _abandon(self, future: asyncio.Future) -> None:
        """A request this connection had started runs to its end and its
        answer is dropped, as Kafka's request handlers do when a client
        goes away. Cancelling it half way would cut a coordinator's
        transition between its log append and its state change: a
        transactional producer SIGKILLed during an InitProducerId left its
        transactional id answering CONCURRENT_TRANSACTIONS for good."""
        if future.done():  # an answer started and finished at once (eager.start)
            _drop_answer(future)
        elif self._cancel_on_close or not _is_request(future):
            future.cancel()
        else:
            future.add_done_callback(_drop_answer)


def _is_request(future: asyncio.Future | None) -> TypeGuard[asyncio.Task]:
    return isinstance(future, asyncio.Task) and future.get_name() == REQUEST_TASK


def _drop_answer(task: asyncio.Future) -> None:
    """The answer of a request whose client went away: nobody reads it,
    but a handler that failed is still worth a line in the log."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None and not isinstance(exc, CloseConnection):
        log.warning("handler of a closed connection failed: %r", exc)


def _inline_small_slices(chunks) -> list:
    """The chunks, with each file slice of at most INLINE_SLICE_BYTES read
    into memory. A short read (the segment was truncated under the fetch)
    keeps the slice, and the sendfile path closes the connection."""
    inlined = []
    for chunk in chunks:
        if not isinstance(chunk, IN_MEMORY) and 0 < chunk.size <= INLINE_SLICE_BYTES:
            data = os.pread(chunk.fd, chunk.size, chunk.position)
            if len(data) == chunk.size:
                chunk = data
        inlined.append(chunk)
    return inlined


def _in_memory(chunks) -> list | None:
    """The chunks with their small slices read, or None when one must go
    by sendfile. Then nothing is read: the send loop takes that response
    next and would read its small slices a second time."""
    for chunk in chunks:
        if not isinstance(chunk, IN_MEMORY) and not 0 < chunk.size <= INLINE_SLICE_BYTES:
            return None
    inlined = _inline_small_slices(chunks)
    for chunk in inlined:
        if not isinstance(chunk, IN_MEMORY):
            return None  # a short read: the sendfile path handles it
    return inlined


_PROBE = bytearray(1)  # RWF_NOWAIT probes read into it (event-loop thread only)
_cold_readers: list[ThreadPoolExecutor] = []


def _cached(fd: int, position: int, size: int) -> bool:
    """Whether the slice's pages look cached: a byte of every
    COLD_PROBE_BYTES and the last, each read with RWF_NOWAIT (EAGAIN: on
    disk). A kernel or file system without RWF_NOWAIT for buffered reads
    answers True (the slice then goes by sendfile, as it always did)."""
    end = position + size
    offsets = [*range(position, end, COLD_PROBE_BYTES), end - 1]
    for offset in offsets:
        try:
            os.preadv(fd, [_PROBE], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True
    return True


def _read_cold(fd: int, length: int, position: int) -> bytes:
    """A worker thread's read of pages on disk, and a hint to the kernel to
    read the next COLD_READ_AHEAD_BYTES too: the next fetch of a consumer
    catching up starts there, and locating its batches reads their headers
    on the event loop."""
    data = os.pread(fd, length, position)
    os.posix_fadvise(fd, position + length, COLD_READ_AHEAD_BYTES, os.POSIX_FADV_WILLNEED)
    return data


def _read_ahead_slices(chunks) -> None:
    """Ask the kernel to read every file slice of a response whose first
    cold slice was just found, so the disk works on all of them while the
    send loop reads them one by one: a consumer catching up on 16
    partitions otherwise kept one 256 KiB read in flight. In
    bench/bench_backlog.py (2.1 GB behind, a producer at 40k msg/s) the
    producer's p99 during the catch-up fell from 67-121 ms to 31-65 and
    the disk read 0.5 GB less. Runs on a worker thread (WILLNEED allocates
    the pages, which may wait for reclaim). A slice whose segment was
    closed meanwhile is skipped."""
    for chunk in chunks:
        if not isinstance(chunk, IN_MEMORY) and chunk.size > 0:
            try:
                os.posix_fadvise(chunk.fd, chunk.position, chunk.size, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass


def _cold_reader() -> ThreadPoolExecutor:
    if not _cold_readers:
        _cold_readers.append(ThreadPoolExecutor(COLD_READ_THREADS, thread_name_prefix="kcore-cold-read"))
    return _cold_readers[0]

"""A TCP proxy on loopback that cuts client connections mid-conversation.

Runs its own event loop in a thread. Each time `cut_every_bytes` more bytes
have gone towards the broker (counted across all connections), the proxy
cuts the connection carrying the chunk that crossed the mark, taking turns
between the two faults an idempotent producer must survive without
duplicates or gaps:

- torn request: the broker gets about half of the chunk, ending inside a
  request, then both sides are closed; it never sees that whole request.
- lost response: the broker gets every byte up to the end of the request
  in progress (complete requests only), then the next bytes it sends back
  are dropped and both sides are closed; it has appended, the client never
  hears so and retries. If the broker answers nothing within
  `response_wait_s`, the connection is cut anyway.

Request boundaries come from Kafka's framing: a 4-byte big-endian size,
then that many bytes.

Cutting stops after `max_cuts` or after `stop_cutting()`, so every test ends
and can read its data back through the same proxy.

Concurrency contract: the counters (`cuts`, `torn_requests`,
`lost_responses`, `connections`) are written only on the proxy's loop
thread; tests read them from theirs (int reads are atomic).
"""
from __future__ import annotations

import asyncio
import threading

CHUNK_BYTES = 64 * 1024


class _RequestFrames:
    """Where requests end in the client's byte stream (size-prefixed frames)."""

    def __init__(self) -> None:
        self.body_left = 0
        self.size_prefix = bytearray()

    @property
    def inside_request(self) -> bool:
        return self.body_left > 0 or bool(self.size_prefix)

    def feed(self, chunk: bytes) -> list[int]:
        """Positions in `chunk` right after each request that ends in it."""
        ends, index = [], 0
        while index < len(chunk):
            if self.body_left:
                step = min(self.body_left, len(chunk) - index)
                self.body_left -= step
                index += step
                if not self.body_left:
                    ends.append(index)
                continue
            needed = 4 - len(self.size_prefix)
            self.size_prefix += chunk[index:index + needed]
            index += min(needed, len(chunk) - index)
            if len(self.size_prefix) == 4:
                self.body_left = int.from_bytes(self.size_prefix, "big")
                self.size_prefix.clear()
                if not self.body_left:
                    ends.append(index)
        return ends


class _Connection:
    def __init__(self) -> None:
        self.requests = _RequestFrames()
        self.drop_next_response = False
        self.response_dropped = asyncio.Event()


class FaultProxy:
    def __init__(self, target_port: int, cut_every_bytes: int = 256 * 1024, max_cuts: int = 20,
                 port: int = 0, response_wait_s: float = 0.5):
        self.target_port = target_port
        self.cut_every_bytes = cut_every_bytes
        self.max_cuts = max_cuts
        self.port = port
        self.response_wait_s = response_wait_s
        self.cuts = 0
        self.torn_requests = 0
        self.lost_responses = 0
        self.connections = 0
        self._bytes_since_cut = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop_cutting(self) -> None:
        """Let every later byte through untouched."""
        self._loop.call_soon_threadsafe(setattr, self, "max_cuts", 0)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        self._server.close()
        for writer in list(self._writers):
            writer.close()

    async def _accept(self, client_reader, client_writer) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return
        self.connections += 1
        connection = _Connection()
        self._writers.update((client_writer, broker_writer))
        upstream = asyncio.ensure_future(self._upstream(client_reader, broker_writer, connection))
        downstream = asyncio.ensure_future(self._downstream(broker_reader, client_writer, connection))
        await asyncio.wait([upstream, downstream], return_when=asyncio.FIRST_COMPLETED)
        for task in (upstream, downstream):
            task.cancel()
        for writer in (client_writer, broker_writer):
            writer.close()
            self._writers.discard(writer)

    def _take_cut(self, size: int) -> str | None:
        """'torn' or 'lost' when this chunk crosses the cut mark, else None."""
        if self.cuts >= self.max_cuts:
            return None
        self._bytes_since_cut += size
        if self._bytes_since_cut < self.cut_every_bytes:
            return None
        self._bytes_since_cut = 0
        self.cuts += 1
        if self.cuts % 2:
            self.torn_requests += 1
            return "torn"
        self.lost_responses += 1
        return "lost"

    async def _upstream(self, reader, writer, connection: _Connection) -> None:
        while True:
            chunk = await reader.read(CHUNK_BYTES)
            if not chunk:
                return
            cut = self._take_cut(len(chunk))
            if cut == "torn":
                writer.write(chunk[:self._tear_point(chunk, connection.requests)])
                await writer.drain()
                return
            if cut == "lost":
                await self._forward_whole_requests(chunk, reader, writer, connection.requests)
                connection.drop_next_response = True
                try:
                    await asyncio.wait_for(connection.response_dropped.wait(), self.response_wait_s)
                except TimeoutError:
                    pass
                return
            connection.requests.feed(chunk)
            writer.write(chunk)
            await writer.drain()

    @staticmethod
    def _tear_point(chunk: bytes, requests: _RequestFrames) -> int:
        """A length near half the chunk that stops inside a request."""
        boundaries = set(requests.feed(chunk))
        if not requests.inside_request:
            boundaries.add(0)
        point = len(chunk) // 2
        while point in boundaries and point < len(chunk):
            point += 1
        return point

    @staticmethod
    async def _forward_whole_requests(chunk: bytes, reader, writer, requests: _RequestFrames) -> None:
        """Forward up to the end of the request in progress, and no further."""
        while True:
            ends = requests.feed(chunk)
            if not requests.inside_request:
                writer.write(chunk)
                break
            if ends:
                writer.write(chunk[:ends[-1]])
                break
            writer.write(chunk)
            await writer.drain()
            chunk = await reader.read(CHUNK_BYTES)
            if not chunk:
                return
        await writer.drain()

    async def _downstream(self, reader, writer, connection: _Connection) -> None:
        while True:
            chunk = await reader.read(CHUNK_BYTES)
            if not chunk:
                return
            if connection.drop_next_response:
                connection.response_dropped.set()
                return
            writer.write(chunk)
            await writer.drain()

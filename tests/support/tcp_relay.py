"""A loopback TCP relay that can be cut like a network link.

``TcpRelay(target_port).start()`` listens on a free loopback port and
forwards each connection to ``target_port``, from an event loop in its own
thread. ``cut()`` makes the link drop every byte in both directions while
every socket stays open, as packets vanish in a network partition (a
client notices only by its own timeouts); connections made during the cut
are accepted and hear nothing. ``cut(answers_only=True)`` drops only the
bytes coming back: requests arrive and are served, their answers are
lost. ``heal()`` forwards again: connections that lost bytes to the cut
are closed (their streams have gaps), new ones work. ``close()`` stops
everything.

Concurrency contract: start, cut, heal and close are called from the test's
thread; the relay's state is changed on its own loop only.
"""
from __future__ import annotations

import asyncio
import threading

CHUNK_BYTES = 64 * 1024


class TcpRelay:
    def __init__(self, target_port: int):
        self.target_port = target_port
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._cut: frozenset[str] = frozenset()  # the directions dropped: "to_target", "to_client"
        self._links: set[_Link] = set()

    def start(self) -> TcpRelay:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def cut(self, answers_only: bool = False) -> None:
        self._call(self._set_cut, frozenset({"to_client"} if answers_only else {"to_client", "to_target"}))

    def heal(self) -> None:
        self._call(self._set_cut, frozenset())

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._shut)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _call(self, function, *args) -> None:
        async def run() -> None:
            function(*args)
        asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def _set_cut(self, cut: frozenset[str]) -> None:
        self._cut = cut
        if not cut:
            for link in [link for link in self._links if link.lost_bytes]:
                link.close()

    def _shut(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.close()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            target_reader, target_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        link = _Link(writer, target_writer)
        self._links.add(link)
        try:
            await asyncio.gather(self._pump(reader, target_writer, link, "to_target"),
                                 self._pump(target_reader, writer, link, "to_client"))
        finally:
            link.close()
            self._links.discard(link)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    link: _Link, direction: str) -> None:
        try:
            while chunk := await reader.read(CHUNK_BYTES):
                if direction in self._cut:
                    link.lost_bytes += len(chunk)
                    continue
                writer.write(chunk)
                await writer.drain()
        except OSError:
            pass
        finally:
            link.close()


class _Link:
    """The two sockets of one relayed connection."""

    def __init__(self, client: asyncio.StreamWriter, target: asyncio.StreamWriter):
        self.writers = (client, target)
        self.lost_bytes = 0

    def close(self) -> None:
        for writer in self.writers:
            writer.close()

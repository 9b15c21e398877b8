"""A delaying, rate-limiting TCP proxy: added network delay and bandwidth
where ``tc netem`` is missing (this machine's kernel has no sch_netem).

    python -m kcore.bench.proxy --listen-port 19092 --target 127.0.0.1:9092 \
        --delay-ms 5 --rate-mbit 1000

Each direction of each connection is a pump: a reader stamps every chunk
it reads with ``arrival + delay`` and queues it; a writer sends a chunk
once its time has come and, with a rate, no sooner than the link would
have finished sending the previous bytes (serialization delay
``len / rate``), so a burst queues like on a real link. Delay is one-way:
a request/response round trip gains twice ``--delay-ms``. The broker must
advertise the proxy's address (``advertised.listeners``) or the clients
would reconnect to the broker directly after their metadata request.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

# Larger reads mean fewer trips through the queue per MB: the proxy shares
# the machine's 2 cores with broker and clients, so its CPU per MB matters.
CHUNK_BYTES = 262144


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                delay_s: float, rate_bytes_s: float) -> None:
    queue: asyncio.Queue = asyncio.Queue()

    async def read_side() -> None:
        while True:
            data = await reader.read(CHUNK_BYTES)
            await queue.put((time.monotonic() + delay_s, data))
            if not data:
                return

    async def write_side() -> None:
        link_free = 0.0
        while True:
            due, data = await queue.get()
            if not data:
                writer.close()
                return
            now = time.monotonic()
            if rate_bytes_s:
                link_free = max(link_free, now) + len(data) / rate_bytes_s
                due = max(due, link_free)
            # A timer may fire up to a clock tick early (uvloop rounds to
            # 1 ms): sleep again until the due time has really passed, so
            # the proxy never adds less than its delay.
            while due > now:
                await asyncio.sleep(due - now)
                now = time.monotonic()
            writer.write(data)
            await writer.drain()

    await asyncio.gather(read_side(), write_side(), return_exceptions=True)


async def serve(listen_host: str, listen_port: int, target_host: str, target_port: int,
                delay_ms: float, rate_mbit: float) -> None:
    delay_s = delay_ms / 1000
    rate_bytes_s = rate_mbit * 1e6 / 8

    async def handle(client_reader, client_writer) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pump(client_reader, upstream_writer, delay_s, rate_bytes_s),
                             _pump(upstream_reader, client_writer, delay_s, rate_bytes_s))

    server = await asyncio.start_server(handle, listen_host, listen_port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen-host", default="127.0.0.1")
    parser.add_argument("--listen-port", type=int, required=True)
    parser.add_argument("--target", required=True, help="host:port of the broker")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per direction")
    parser.add_argument("--rate-mbit", type=float, default=0.0, help="per direction per connection; 0 = unlimited")
    args = parser.parse_args(argv)
    host, port = args.target.rsplit(":", 1)
    try:
        import uvloop
        runner: Callable[..., Any] = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        runner(serve(args.listen_host, args.listen_port, host, int(port), args.delay_ms, args.rate_mbit))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

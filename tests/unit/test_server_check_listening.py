"""check_listening: a server whose listen() failed after its bind is
reported as a taken port (uvloop closes it instead of raising)."""
from __future__ import annotations

import asyncio
import errno

import pytest
import uvloop

from kcore.server.sockets import check_listening


async def _noop(reader, writer) -> None:
    writer.close()


def test_a_listening_server_passes_and_a_closed_one_is_a_taken_port():
    async def scenario() -> None:
        server = await asyncio.start_server(_noop, "127.0.0.1", 0)
        check_listening(server)
        server.close()
        with pytest.raises(OSError) as raised:
            check_listening(server)
        assert raised.value.errno == errno.EADDRINUSE

    uvloop.run(scenario())

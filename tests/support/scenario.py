"""Run an async test scenario as the broker runs its code: on a fresh uvloop
loop, under a deadline, so a wait that never ends fails the test instead of
holding it."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import uvloop

SCENARIO_TIMEOUT_S = 30.0


def run(scenario: Callable[[], Awaitable[None]], timeout_s: float = SCENARIO_TIMEOUT_S) -> None:
    async def bounded():
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with asyncio.timeout(timeout_s):
            await scenario()
    uvloop.run(bounded())

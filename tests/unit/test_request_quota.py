"""request_percentage's measure: the time spent inside a handler's steps,
not the time it waits."""
from __future__ import annotations

import asyncio
import time

import pytest

from kcore.server.request_quota import Timed


def test_waiting_costs_nothing_and_work_counts():
    async def handler() -> str:
        await asyncio.sleep(0.2)
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:  # 50 ms of work
            pass
        await asyncio.sleep(0)
        return "answer"

    async def main():
        timed = Timed(handler())
        assert await timed == "answer"
        return timed.busy_s

    busy_s = asyncio.run(main())
    assert 0.05 <= busy_s < 0.1


def test_exceptions_and_cancellation_reach_the_caller():
    async def failing():
        await asyncio.sleep(0)
        raise ValueError("bad request")

    async def waiting(started: asyncio.Event, cancelled: list):
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main():
        with pytest.raises(ValueError):
            await Timed(failing())
        started, cancelled = asyncio.Event(), []
        async def timed_waiting():
            return await Timed(waiting(started, cancelled))

        task = asyncio.get_running_loop().create_task(timed_waiting())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled

    assert asyncio.run(main()) == [True]

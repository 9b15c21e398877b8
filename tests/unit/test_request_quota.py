"""request_percentage's measure: the time spent inside a handler's steps,
not the time it waits."""
from __future__ import annotations

import asyncio

import pytest

from kcore.server.request_quota import Timed
from tests.support.clock import ManualClock


def test_waiting_costs_nothing_and_work_counts():
    """Work before and after a long wait counts; the 10 s the handler
    waits (other connections' time) does not. The clock moves only when
    the test says, so the sum is exact on a loaded machine too."""
    clock = ManualClock()
    waiting: list[bool] = []

    async def handler(released: asyncio.Future) -> str:
        clock.advance(0.01)  # 10 ms of work
        waiting.append(True)
        await released
        clock.advance(0.05)  # 50 ms of work
        await asyncio.sleep(0)
        clock.advance(0.002)  # 2 ms more after another step
        return "answer"

    async def main():
        loop = asyncio.get_running_loop()
        released = loop.create_future()
        timed = Timed(handler(released), clock)

        async def drive():
            return await timed

        task = loop.create_task(drive())
        for _ in range(100):  # bounded: the handler reaches its wait in one step
            if waiting:
                break
            await asyncio.sleep(0)
        assert waiting and timed.busy_s == pytest.approx(0.01)
        clock.advance(10.0)
        released.set_result(None)
        assert await task == "answer"
        return timed.busy_s

    assert asyncio.run(main()) == pytest.approx(0.062)


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

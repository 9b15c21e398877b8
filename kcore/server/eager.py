"""Start a request's handler in the callback that read it.

A task per request costs its creation, a weak-set entry and a turn of the
event loop before the handler runs; most Produce and Fetch requests never
wait (an acks=1 append, a fetch that finds its bytes), so their handler can
run to its end at once, and its answer is a future already done. A handler
that does wait goes on in a task from where it stopped.

Python 3.12 has this built in: a task started with ``eager_start``, the
current task while its first step runs, which 3.12's ``asyncio.wait_for``
needs. On 3.11 the first step runs with no current task, so code there
must not need one (``asyncio.timeout``; 3.11's ``wait_for`` needs none).
"""
from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Generator
from typing import Any

from kcore.server.relay import relay


def start(loop: asyncio.AbstractEventLoop, coro: Coroutine, name: str) -> asyncio.Future:
    """``coro`` run up to its first wait: a done future when it did not
    wait, else the task that finishes it."""
    if sys.version_info >= (3, 12):
        return asyncio.Task(coro, loop=loop, name=name, eager_start=True)
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        future = loop.create_future()
        future.set_result(stop.value)
        return future
    except asyncio.CancelledError:
        future = loop.create_future()
        future.cancel()
        return future
    except Exception as exc:
        future = loop.create_future()
        future.set_exception(exc)
        return future
    return loop.create_task(_finish(coro, yielded), name=name)


async def _finish(coro: Coroutine, yielded: Any) -> Any:
    return await _Resumed(coro, yielded)


class _Resumed:
    """The rest of a started coroutine, awaited by a task."""

    __slots__ = ("_coro", "_yielded")

    def __init__(self, coro: Coroutine, yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield from relay(self._coro, self._yielded))

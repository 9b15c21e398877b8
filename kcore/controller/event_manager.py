"""The active controller's event queue (Kafka's ControllerEventManager).

Events run one at a time, in arrival order, in one task, so a decision
never sees the state half-way through another. An event is a bound method
of the controller and its arguments: ``post`` queues one whose result
nobody awaits (a watch fired, a timer), ``call`` one whose caller awaits
its result (a broker's request). Both are typed by the method they name
(``ParamSpec``), so mypy checks the arguments and the result, and a grep
for the method finds every event that runs it.

An event that raises ``ControllerMovedError`` ends the office: the queue
stops and ``on_moved`` runs. Any other exception fails that event alone.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from kcore.controller.zk_state import ControllerMovedError

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class ControllerEvent:
    """A queued event: its handler with the arguments bound, and the future
    of the caller awaiting its result (None for a posted event)."""
    name: str
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future | None = None


class ControllerEventManager:
    def __init__(self, on_moved: Callable[[ControllerMovedError], None]):
        self._on_moved = on_moved
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self.open = False

    def start(self) -> None:
        self.open = True
        self._task = asyncio.get_running_loop().create_task(self._run())

    def post(self, handler: Callable[P, Awaitable[Any]], *args: P.args, **kwargs: P.kwargs) -> None:
        """Queue an event nobody awaits; dropped once the queue is closed."""
        if self.open:
            self._queue.put_nowait(_event(handler, args, kwargs))

    async def call(self, handler: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs) -> R:
        """Queue an event and return its handler's result; raises
        ControllerMovedError once the queue is closed."""
        if not self.open:
            raise ControllerMovedError("not the controller")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_event(handler, args, kwargs, future))
        return await future

    def close(self) -> None:
        """No more events: the running one is cancelled, the callers of the
        queued ones get ControllerMovedError."""
        self.open = False
        if self._task is not None:
            self._task.cancel()
        while not self._queue.empty():
            future = self._queue.get_nowait().future
            if future is not None and not future.done():
                future.set_exception(ControllerMovedError("the controller moved"))

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                result = await event.run()
            except ControllerMovedError as exc:
                _fail(event, exc)
                self._on_moved(exc)
                return
            except Exception as exc:
                log.exception("controller event %s failed", event.name)
                _fail(event, exc)
                continue
            if event.future is not None and not event.future.done():
                event.future.set_result(result)


def _event(handler: Callable[..., Awaitable[Any]], args: tuple, kwargs: dict,
           future: asyncio.Future | None = None) -> ControllerEvent:
    return ControllerEvent(handler.__name__.removeprefix("_on_"),
                           functools.partial(handler, *args, **kwargs), future)


def _fail(event: ControllerEvent, exc: BaseException) -> None:
    if event.future is not None and not event.future.done():
        event.future.set_exception(exc)

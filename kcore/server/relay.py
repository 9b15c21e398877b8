"""Drive a coroutine from inside the task that awaits a relay of it.

What the coroutine yields (a future it waits on) goes up to the task;
what the task sends or throws back (a result, a cancellation) goes down to
the coroutine. Two callers need the steps in their own hands: the eager
start on Python 3.11 (server/eager.py) hands a task a coroutine whose
first step already ran, and a request quota (server/request_quota.py)
times each step. One await through a relay costs ~1 us.
"""
from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any, Protocol

NOT_STARTED: Any = object()


class StepTimer(Protocol):
    """Told how long each step of the coroutine ran."""

    def now(self) -> float: ...

    def add(self, seconds: float) -> None: ...


def relay(coro: Coroutine, yielded: Any = NOT_STARTED,
          timer: StepTimer | None = None) -> Generator[Any, Any, Any]:
    """``yield from`` this in an ``__await__``: the coroutine's result, or
    its error. ``yielded``: what the coroutine's first step (run by the
    caller) yielded; left out, the relay runs that step too."""
    message: Any = None
    error: BaseException | None = None
    while True:
        if yielded is NOT_STARTED:
            started = timer.now() if timer is not None else 0.0
            try:
                yielded = coro.send(message) if error is None else coro.throw(error)
            except StopIteration as stop:
                return stop.value
            finally:
                if timer is not None:
                    timer.add(timer.now() - started)
        try:
            message, error = (yield yielded), None
        except BaseException as exc:  # cancellation goes to the coroutine
            message, error = None, exc
        yielded = NOT_STARTED

"""A broker inside the test's own process: its event loop runs in a thread.

It starts in milliseconds once kcore is imported (the import, ~0.3-0.5 s,
is paid once per process), against ~0.4-0.8 s for a broker subprocess.
It is safe where the test treats the broker as a server behind its socket:
clients in the test's threads or event loop, one broker or several, each
stopped cleanly at the end. It is not for a test that kills or pauses the
broker (that would be the test's own process), for a node of several
processes (``num.processes``), or where the test must not share the GIL
with the broker; those take a ``BrokerProcess``.
"""
from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcore.testing.broker import STARTUP_TIMEOUT_S, STOP_TIMEOUT_S, TEST_SETTINGS
from kcore.testing.ports import free_port

if TYPE_CHECKING:
    from kcore.server.broker import Broker


class EmbeddedBroker:
    """A kcore broker serving on 127.0.0.1:``port`` from a thread of this
    process. start() and stop() are called from one thread (not the
    broker's); the broker's own objects belong to its loop and are not to
    be touched from outside."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None,
                 port: int | None = None):
        settings = dict(overrides or {})
        if int(settings.get("num.processes", "1")) > 1:
            raise ValueError("an embedded broker is one process: num.processes > 1 needs BrokerProcess")
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.settings = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                         "log.dirs": str(self.data_dir), **settings}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broker: Broker | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._broker is not None

    def start(self) -> EmbeddedBroker:
        """Start the broker's thread and wait until it listens. One start
        per object: a stopped broker is not started again."""
        if self._thread is not None or self._started.is_set():
            raise RuntimeError("an EmbeddedBroker starts once")
        # Imported here, not at the top, so that a test run that never
        # embeds a broker does not pay for the import; and on the caller's
        # thread, so that an import error is raised to the caller.
        import kcore.server.broker  # noqa: F401
        self._thread = threading.Thread(target=self._run, name=f"kcore-broker-{self.port}", daemon=True)
        self._thread.start()
        if not self._started.wait(STARTUP_TIMEOUT_S):
            raise RuntimeError(f"embedded broker did not start within {STARTUP_TIMEOUT_S}s")
        if self._error is not None:
            raise RuntimeError(f"embedded broker did not start: {self._error!r}") from self._error
        return self

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop serving, shut down cleanly, and join the thread."""
        if self._thread is None:
            return
        if self._loop is not None and self._broker is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._broker.request_stop)
            except RuntimeError:  # the loop closed in between
                pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"embedded broker did not stop within {timeout}s")
        self._thread = None
        if self._error is not None:  # its shutdown failed: the test should hear of it
            raise RuntimeError(f"embedded broker failed: {self._error!r}") from self._error

    def _run(self) -> None:
        try:
            _event_loop_runner()(self._serve())
        except BaseException as exc:  # reported to start(), never lost in the thread
            self._error = self._error or exc
        finally:
            self._broker = None
            self._started.set()

    async def _serve(self) -> None:
        from kcore.config import BrokerConfig
        from kcore.server.broker import Broker
        broker: Broker | None = None
        try:
            broker = Broker(BrokerConfig.load(None, [f"{k}={v}" for k, v in self.settings.items()]))
            await broker.start()
        except BaseException as exc:
            self._error = exc
            if broker is not None:  # what the half-done start opened (files, threads)
                await _quietly(broker.shutdown())
            return
        self._loop, self._broker = asyncio.get_running_loop(), broker
        self._started.set()
        try:
            await broker.serve_until_stopped()
        finally:
            await broker.shutdown()

    def __enter__(self) -> EmbeddedBroker:
        return self if self.running else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """uvloop's, as `kcore broker` runs, or asyncio's without it."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


async def _quietly(step: Awaitable[None]) -> None:
    try:
        await step
    except Exception:  # the start's own error is the one reported
        pass


@contextmanager
def embedded_broker(overrides: Mapping[str, str] | None = None,
                    data_dir: Path | None = None) -> Iterator[EmbeddedBroker]:
    """One broker in this process (`TEST_SETTINGS` under ``overrides``),
    stopped on exit; data in ``data_dir`` or a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="kcore-broker-") as scratch:
        where = Path(data_dir) if data_dir is not None else Path(scratch) / "data"
        with EmbeddedBroker(where, {**TEST_SETTINGS, **(overrides or {})}) as started:
            yield started

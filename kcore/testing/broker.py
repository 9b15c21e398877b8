"""A real `kcore broker` subprocess on a free loopback port.

`BrokerProcess` is the building block (start, stop with SIGTERM, kill with
SIGKILL, pause, restart on the same port and data dir, so a test can check
what survives); `broker()` is the context manager for tests that want one
broker and nothing else to think about.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from kcore.config_def import process_count
from kcore.testing.children import parent_death_hook
from kcore.testing.cli import kcore_command
from kcore.testing.ports import free_port, free_ports

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
# A broker made for a test: no /metrics listener and no schema registry
# listener (their default ports, 9644 and 8081, would be shared by every
# broker on the machine) and no 3 s wait before a new group's first
# rebalance (Kafka's own test images set the same).
TEST_SETTINGS: dict[str, str] = {
    "http.listeners": "",
    "schema.registry.listeners": "",
    "group.initial.rebalance.delay.ms": "0",
}


class BrokerProcess:
    """`python -m kcore broker` with its own data dir and port.

    Its output goes to ``log_path`` (beside the data dir); ``log()`` reads
    the tail, which every start-up error carries. Not thread-safe: one
    owner starts and stops it."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None,
                 port: int | None = None, launcher: Sequence[str] | None = None,
                 host: str = "127.0.0.1", prefix: Sequence[str] = (),
                 env: Mapping[str, str] | None = None):
        """``launcher``: the argv that runs the kcore command (another
        environment's ``bin/kcore``, say); this interpreter's by default.
        A broker in a network namespace listens on that namespace's
        ``host`` and starts under ``prefix`` (``ip netns exec NAME``);
        ``env`` is added to its environment."""
        self.data_dir = Path(data_dir)
        self.launcher = list(launcher) if launcher is not None else kcore_command()
        self.host = host
        self.prefix = tuple(prefix)
        self.env = dict(env or {})
        self.overrides = dict(overrides or {})
        # num.processes=N: a supervisor and N broker processes on port..port+N-1.
        self.processes = process_count(self.overrides.get("num.processes", "1"))
        self.port = port or (free_ports(self.processes) if self.processes > 1 else free_port())
        self.process: subprocess.Popen | None = None
        self.paused = False
        self.log_path = self.data_dir.parent / f"broker-{self.port}.log"

    @property
    def bootstrap_servers(self) -> str:
        """What a client's ``bootstrap.servers`` names."""
        return f"{self.host}:{self.port}"

    # The project's own tests say `bootstrap`; one value under both names.
    bootstrap = bootstrap_servers

    def command(self) -> list[str]:
        settings = {"listeners": f"PLAINTEXT://{self.host}:{self.port}",
                    "log.dirs": str(self.data_dir), **self.overrides}
        args = [*self.prefix, *self.launcher, "broker"]
        # To follow a flaky cluster test in the brokers' own words (DEBUG).
        if os.environ.get("KCORE_TEST_BROKER_LOG_LEVEL"):
            args += ["--log-level", os.environ["KCORE_TEST_BROKER_LOG_LEVEL"]]
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        return args

    def start(self) -> BrokerProcess:
        """Start and wait (bounded) until the broker accepts connections."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            # A session of its own: kill() takes a node's supervisor and its
            # broker processes together. SIGTERM when this process dies
            # (kcore.testing.children), so a killed test run leaves no broker.
            self.process = subprocess.Popen(self.command(), stdout=log_file, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                            start_new_session=True, preexec_fn=parent_death_hook())
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n{self.log()}")
            if self._serving():
                return self
            # 10 ms: start-up takes ~0.3-0.5 s, so a coarser poll would add
            # a noticeable share to every test that starts a broker.
            time.sleep(0.01)
        self.kill()
        raise RuntimeError(f"broker did not listen within {STARTUP_TIMEOUT_S}s:\n{self.log()}")

    def _serving(self) -> bool:
        """Every process listens (a supervisor says so once they all do)."""
        if self.processes > 1:
            return f"serves with {self.processes} processes" in self.log()
        try:
            socket.create_connection((self.host, self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM and wait: the broker shuts down cleanly. Its exit status."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.resume()
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"broker ignored SIGTERM for {timeout}s:\n{self.log()}") from None

    def kill(self) -> None:
        """SIGKILL to the broker's whole process group, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: alive to the kernel, silent to everyone else."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
        self.paused = False

    @property
    def running(self) -> bool:
        """Alive and not paused: it answers."""
        return self.process is not None and self.process.poll() is None and not self.paused

    def restart(self, clean: bool = True) -> BrokerProcess:
        if clean:
            self.stop()
        else:
            self.kill()
        return self.start()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except FileNotFoundError:
            return ""

    def __enter__(self) -> BrokerProcess:
        return self.start() if self.process is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()


@contextmanager
def broker(overrides: Mapping[str, str] | None = None, data_dir: Path | None = None) -> Iterator[BrokerProcess]:
    """One started broker (`TEST_SETTINGS` under ``overrides``), killed on
    exit; its data lives in ``data_dir`` or in a temporary directory removed
    on exit::

        with kcore.testing.broker() as b:
            producer = Producer({"bootstrap.servers": b.bootstrap_servers})
    """
    with tempfile.TemporaryDirectory(prefix="kcore-broker-") as scratch:
        where = Path(data_dir) if data_dir is not None else Path(scratch) / "data"
        with BrokerProcess(where, {**TEST_SETTINGS, **(overrides or {})}) as started:
            yield started

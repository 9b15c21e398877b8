"""Test support: a real `kcore broker` subprocess on a free loopback port."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

STARTUP_TIMEOUT_S = 30.0


def free_port() -> int:
    """A free loopback port below the kernel's ephemeral range: a port the
    kernel hands out to outgoing connections can be taken by any client
    between this pick and the broker's bind (seen: port + 1 of a
    two-process node, taken by a test's own client connection)."""
    low = _ephemeral_low()
    for _ in range(200):
        port = _PORTS.randrange(FIRST_TEST_PORT, low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# System randomness: pytest-randomly reseeds `random` per test, which would
# pick the same ports test after test.
_PORTS = random.SystemRandom()
FIRST_TEST_PORT = 10_000


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, FIRST_TEST_PORT + 1000)


def free_ports(count: int, attempts: int = 50) -> int:
    """The first of ``count`` consecutive free loopback ports (a node with
    num.processes=count listens on port + index)."""
    for _ in range(attempts):
        base = free_port()
        if base + count > 65535:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports in {attempts} attempts")


class BrokerProcess:
    """`python -m kcore.cli.main broker` with its own data dir and port.

    start()/stop() (SIGTERM, clean) /kill() (SIGKILL) /restart() keep the
    same port and data dir, so a test can check what survives."""

    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None,
                 port: int | None = None, host: str = "127.0.0.1",
                 prefix: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.data_dir = Path(data_dir)
        # A broker in a network namespace listens on that namespace's
        # address and starts under `prefix` (`ip netns exec NAME`).
        self.host = host
        self.prefix = tuple(prefix)
        self.env = dict(env or {})
        self.overrides = dict(overrides or {})
        # num.processes=N: a supervisor and N broker processes on port..port+N-1.
        self.processes = int(self.overrides.get("num.processes", "1"))
        self.port = port or (free_ports(self.processes) if self.processes > 1 else free_port())
        self.process: subprocess.Popen | None = None
        self.paused = False
        self.log_path = self.data_dir.parent / f"broker-{self.port}.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        settings = {"listeners": f"PLAINTEXT://{self.host}:{self.port}",
                    "log.dirs": str(self.data_dir), **self.overrides}
        args = [*self.prefix, sys.executable, "-m", "kcore.cli.main", "broker"]
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        return args

    def start(self) -> BrokerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(self.log_path, "ab")
        # A session of its own: kill() takes a node's supervisor and its
        # broker processes together.
        self.process = subprocess.Popen(self.command(), stdout=log_file, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                        start_new_session=True)
        log_file.close()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n{self.log()}")
            if self._serving():
                return self
            time.sleep(0.05)
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

    def stop(self, timeout: float = 20.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"broker ignored SIGTERM for {timeout}s:\n{self.log()}") from None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()

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

"""Throw-away ZooKeeper servers for tests: real JVMs from Debian's jars.

`ZooKeeperServer` is one server (standalone, or a member of a
`ZooKeeperEnsemble`) in its own directory on free loopback ports. Every
wait is bounded in time and the server's log tail goes into the error;
the fixtures of kcore.testing.plugin kill every process they started,
whatever the test did.

The jars are Debian's (`apt-get install zookeeper`, Java 17 or newer);
``KCORE_ZOOKEEPER_JARS`` names another directory holding the same jars.

Sessions expire fast: tickTime 200 ms, and the server grants session
timeouts from 0.4 s to 10 s (2 to 50 ticks).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kcore.testing.children import parent_death_hook
from kcore.testing.ports import free_port

JAVA_DIR = Path(os.environ.get("KCORE_ZOOKEEPER_JARS", "/usr/share/java"))
# The smallest classpath that runs a server, standalone or in a quorum
# (netty is only for TLS); slf4j-simple puts the server's log on stderr.
CLASSPATH = ":".join(str(JAVA_DIR / jar) for jar in (
    "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"))
# A test server needs little: with the first JIT tier and the serial GC a
# standalone server serves 0.34 s after launch (median of 8 on two cores)
# against 0.38 s with the JVM's defaults, whose slowest start took 1.3 s.
JVM_OPTIONS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
TICK_MS = 200
MIN_SESSION_TIMEOUT_MS = 2 * TICK_MS
MAX_SESSION_TIMEOUT_MS = 10_000
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05


def wait_until(condition: Callable[[], bool], what: str, servers: list[ZooKeeperServer],
               timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Poll `condition()` until true; fail at once if one of `servers`
    exits, and after `timeout` seconds, with their logs."""
    deadline = time.monotonic() + timeout
    while not condition():
        for server in servers:
            if server.process is not None and server.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper {server.connect_string} exited with "
                                   f"{server.process.returncode}:\n{server.log()}")
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {s.connect_string}\n{s.log(2000)}" for s in servers)
            raise RuntimeError(f"ZooKeeper did not {what} within {timeout:g} s:\n{logs}")
        time.sleep(POLL_S)


def four_letter_word(port: int, command: str, timeout: float = 1.0, host: str = "127.0.0.1") -> str:
    """ZooKeeper's four-letter admin command on `host`:`port`."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """One ZooKeeper JVM. Standalone unless an ensemble gives it `myid`
    and `peers` (every member's (myid, host, quorum port, election port)).
    A server in a network namespace serves on `host` and
    starts under `prefix` (`ip netns exec NAME`)."""

    def __init__(self, directory: Path, myid: int | None = None, host: str = "127.0.0.1",
                 prefix: tuple[str, ...] = ()):
        self.directory = Path(directory)
        self.myid = myid
        self.client_port = free_port()
        # Used only in an ensemble (with a myid); picked for every server
        # so that they are plain ints.
        self.quorum_port = free_port()
        self.election_port = free_port()
        self.peers: list[tuple[int, str, int, int]] = []
        self.host = host
        self.prefix = tuple(prefix)
        self.process: subprocess.Popen | None = None
        self.log_path = self.directory / "server.log"

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.client_port}"

    def config(self) -> str:
        lines = [f"tickTime={TICK_MS}", f"dataDir={self.directory / 'data'}",
                 f"clientPort={self.client_port}", f"clientPortAddress={self.host}",
                 "admin.enableServer=false", f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS}",
                 f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
                 "4lw.commands.whitelist=ruok,srvr,stat,mntr"]
        if self.myid:
            lines += ["initLimit=25", "syncLimit=10"]  # 5 s and 2 s
            lines += [f"server.{myid}={host}:{quorum}:{election}"
                      for myid, host, quorum, election in self.peers]
        return "\n".join(lines) + "\n"

    def launch(self) -> ZooKeeperServer:
        """Start the JVM without waiting for it to serve."""
        missing = [jar for jar in CLASSPATH.split(":") if not Path(jar).is_file()]
        if missing:
            raise RuntimeError(f"ZooKeeper's jars are missing ({', '.join(missing)}): "
                               "Debian's zookeeper package has them (or set KCORE_ZOOKEEPER_JARS)")
        (self.directory / "data").mkdir(parents=True, exist_ok=True)
        if self.myid:
            (self.directory / "data" / "myid").write_text(f"{self.myid}\n")
        config = self.directory / "zoo.cfg"
        config.write_text(self.config())
        main = ("org.apache.zookeeper.server.quorum.QuorumPeerMain" if self.myid
                else "org.apache.zookeeper.server.ZooKeeperServerMain")
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                [*self.prefix, "java", *JVM_OPTIONS, "-cp", CLASSPATH, main, str(config)],
                stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=parent_death_hook())
        return self

    def start(self) -> ZooKeeperServer:
        """Launch and wait (bounded) until the server answers `ruok` and serves."""
        self.launch()
        wait_until(lambda: self.mode() is not None, "serve requests", [self])
        return self

    def mode(self) -> str | None:
        """`srvr`'s Mode (standalone, leader, follower), None if not serving."""
        try:
            if four_letter_word(self.client_port, "ruok", host=self.host) != "imok":
                return None
            reply = four_letter_word(self.client_port, "srvr", host=self.host)
        except OSError:
            return None
        for line in reply.splitlines():
            if line.startswith("Mode: "):
                return line.split(": ", 1)[1].strip()
        return None

    def stop(self) -> None:
        """SIGTERM (resuming a paused server first), SIGKILL after 10 s."""
        process = self.process
        if process is not None and process.poll() is None:
            self.resume()
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def pause(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self, tail: int = 5000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""


class ZooKeeperEnsemble:
    """`n` servers (myid 1..n) forming one quorum; `servers[i]` is the
    i-th. start() waits until one is leader and the others followers.
    `places` gives each member its (host, command prefix) when they live
    in network namespaces."""

    def __init__(self, directory: Path, n: int = 3,
                 places: list[tuple[str, tuple[str, ...]]] | None = None):
        places = places or [("127.0.0.1", ())] * n
        self.servers = [ZooKeeperServer(Path(directory) / f"zk{myid}", myid, host, prefix)
                        for myid, (host, prefix) in enumerate(places, 1)]
        peers = [(myid, s.host, s.quorum_port, s.election_port) for myid, s in enumerate(self.servers, 1)]
        for server in self.servers:
            server.peers = peers

    @property
    def connect_string(self) -> str:
        return ",".join(server.connect_string for server in self.servers)

    def start(self) -> ZooKeeperEnsemble:
        for server in self.servers:
            server.launch()
        wait_until(self._formed, "form a quorum with one leader", self.servers)
        return self

    def _formed(self) -> bool:
        modes = sorted(str(server.mode()) for server in self.servers if server.running)
        return modes == sorted(["leader"] + ["follower"] * (len(self.servers) - 1))

    def leader(self) -> int | None:
        """The index of the server that is leader now."""
        for index, server in enumerate(self.servers):
            if server.running and server.mode() == "leader":
                return index
        return None

    def stop_server(self, index: int) -> None:
        self.servers[index].stop()

    def start_server(self, index: int) -> None:
        """Start one member again and wait until it has rejoined."""
        server = self.servers[index]
        server.launch()
        wait_until(lambda: server.mode() in ("leader", "follower"), "rejoin the quorum", [server])

    def kill(self) -> None:
        for server in self.servers:
            server.kill()


"""Network set-ups for the network sweep: a veth pair between two network
namespaces the harness creates, and running code inside a namespace.

Layout (both namespaces are new and hold only ``lo`` and their veth end,
so no packet can leave them):

    netns kbench-<id>-srv            netns kbench-<id>-cli
      veth kb<id>s 10.213.<n>.1/30 <-> veth kb<id>c 10.213.<n>.2/30
      (broker)                         (load generators)

Creating namespaces needs root (CAP_SYS_ADMIN); ``create_pair`` raises
``NetnsUnavailable`` with the command's message where that is refused,
and the sweep records the veth configs as skipped with that reason.
``tc netem`` adds delay on the veth pair where the kernel has sch_netem;
where it has not (this machine), that config is skipped with tc's message
and added delay and rate come from ``kcore.bench.proxy`` instead.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import threading

CLONE_NEWNET = 0x40000000


class NetnsUnavailable(RuntimeError):
    pass


class NetnsPair:
    """Two namespaces joined by a veth pair; ``close`` deletes both.

    Not thread-safe; one owner creates and closes it."""

    def __init__(self, tag: int):
        self.server_ns = f"kbench-{os.getpid()}-{tag}-srv"
        self.client_ns = f"kbench-{os.getpid()}-{tag}-cli"
        subnet = 16 + tag % 200
        self.server_ip = f"10.213.{subnet}.1"
        self.client_ip = f"10.213.{subnet}.2"
        self._veth = (f"kb{os.getpid() % 100000}{tag}s"[:15], f"kb{os.getpid() % 100000}{tag}c"[:15])
        self._created: list[str] = []

    def create(self) -> NetnsPair:
        server_veth, client_veth = self._veth
        try:
            for ns in (self.server_ns, self.client_ns):
                _ip("netns", "add", ns)
                self._created.append(ns)
            _ip("link", "add", server_veth, "type", "veth", "peer", "name", client_veth)
            for veth, ns, address in ((server_veth, self.server_ns, self.server_ip),
                                      (client_veth, self.client_ns, self.client_ip)):
                _ip("link", "set", veth, "netns", ns)
                _ip("-n", ns, "addr", "add", f"{address}/30", "dev", veth)
                _ip("-n", ns, "link", "set", veth, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except NetnsUnavailable:
            self.close()
            raise
        return self

    def close(self) -> None:
        while self._created:
            subprocess.run(["ip", "netns", "del", self._created.pop()], capture_output=True)

    def add_netem_delay(self, delay_ms: float) -> None:
        """``tc netem`` delay on both veth ends (each direction gains it)."""
        for veth, ns in zip(self._veth, (self.server_ns, self.client_ns)):
            done = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", veth, "root",
                                   "netem", "delay", f"{delay_ms}ms"], capture_output=True, text=True)
            if done.returncode != 0:
                raise NetnsUnavailable(f"tc netem: {done.stderr.strip() or done.returncode}")

    def exec_prefix(self, ns: str) -> list[str]:
        return ["ip", "netns", "exec", ns]


def _ip(*args: str) -> None:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {error}") from error
    if done.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {done.stderr.strip()}")


def in_netns(name: str, function, *args):
    """``function(*args)`` on a fresh thread that has joined netns ``name``
    (setns changes only the calling thread's namespace)."""
    outcome: dict = {}

    def body() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                outcome["error"] = OSError(ctypes.get_errno(), f"setns {name}")
                return
        finally:
            os.close(fd)
        try:
            outcome["value"] = function(*args)
        except Exception as error:  # handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]

"""Child processes of the harness: start, wait for a port, stop for sure.

Every broker, proxy and load generator the harness starts is a child that
gets SIGTERM from the kernel if the harness dies (``PR_SET_PDEATHSIG``),
so an interrupted sweep leaves nothing running; ``stop`` sends SIGTERM,
waits, then SIGKILL.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from kcore.testing.children import die_with_parent

STOP_TIMEOUT_S = 30.0


def spawn(command: list[str], log_path: Path | None = None, cwd: Path | None = None,
          env: dict | None = None, pipes: bool = False) -> subprocess.Popen:
    """Start ``command``, output to ``log_path`` (with ``pipes``: stdin and
    stdout are text pipes, stderr goes to ``log_path``)."""
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        if pipes:
            return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out,
                                    text=True, bufsize=1, cwd=cwd, env=env, preexec_fn=die_with_parent)
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                preexec_fn=die_with_parent)
    finally:
        if not isinstance(out, int):
            out.close()


def stop(process: subprocess.Popen | None, timeout: float = STOP_TIMEOUT_S) -> int | None:
    if process is None:
        return None
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def wait_for_port(host: str, port: int, process: subprocess.Popen, timeout: float,
                  netns: str | None = None, log_path: Path | None = None) -> None:
    """Until a TCP connect to host:port succeeds (inside ``netns`` if given)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            name = process.args[0] if isinstance(process.args, list) else process.args
            raise RuntimeError(f"{name!s} exited with {process.returncode}: {tail(log_path)}")
        if _connects(host, port, netns):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listened on {host}:{port} within {timeout:.0f}s: {tail(log_path)}")


def _connects(host: str, port: int, netns: str | None) -> bool:
    if netns:
        from kcore.bench.network import in_netns
        return in_netns(netns, _connects, host, port, None)
    try:
        socket.create_connection((host, port), timeout=0.3).close()
        return True
    except OSError:
        return False


def tail(path: Path | None, size: int = 2000) -> str:
    if path is None or not os.path.exists(path):
        return ""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - size))
        return handle.read().decode(errors="replace")

"""A broker start expected to fail: ``kcore broker`` run until it exits by
itself, and a port held taken while it tries."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

EXIT_TIMEOUT_S = 60


def run_broker_to_exit(data_dir: Path, port: int, settings: Mapping[str, str] = {},
                       processes: int = 1) -> subprocess.CompletedProcess:
    """`kcore broker` on 127.0.0.1:``port`` with ``settings``; it must
    exit by itself within EXIT_TIMEOUT_S."""
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(data_dir),
                 "num.processes": str(processes), **settings}
    command = [sys.executable, "-m", "kcore.cli.main", "broker"]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=EXIT_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)


@contextmanager
def held(port: int) -> Iterator[None]:
    """``port`` on 127.0.0.1 taken for the block (or already taken by
    someone else, which serves a test as well)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            pass
        yield

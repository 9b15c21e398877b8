"""The harness side of the load generators (kcore.bench.loadgen).

``Client`` starts one loadgen process with a given interpreter (the Kafka
0.9 peer's clients run under an older confluent-kafka in its own
virtualenv), sends the spec, and follows its stdout on a thread: ready,
progress counts, the result or the error.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from kcore.bench import procs

READY_TIMEOUT_S = 60.0
KCORE_ROOT = str(Path(__file__).resolve().parents[2])


class LoadGenError(RuntimeError):
    pass


class Client:
    """One loadgen process. Concurrency contract: the reader thread writes
    ``progress``/``outcome`` and sets events; the owner reads them."""

    def __init__(self, spec: dict, python: str | None = None, prefix: list[str] | None = None,
                 log_path: Path | None = None):
        self.spec = spec
        self.progress = 0
        self.outcome: dict | None = None
        self.error: str | None = None
        self.ready = threading.Event()
        self.done = threading.Event()
        self.log_path = log_path
        env = {**os.environ, "PYTHONPATH": KCORE_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
        command = (prefix or []) + [python or sys.executable, "-m", "kcore.bench.loadgen"]
        self.process = procs.spawn(command, log_path, env=env, pipes=True)
        # pipes=True: both are text pipes.
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin, self._stdout = self.process.stdin, self.process.stdout
        self._stdin.write(json.dumps(spec) + "\n")
        self._stdin.flush()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        for line in self._stdout:
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "ready":
                self.ready.set()
            elif word == "progress":
                self.progress = int(rest)
            elif word == "result":
                self.outcome = json.loads(rest)
            elif word == "error":
                self.error = rest
        if self.outcome is None and self.error is None:
            self.error = f"loadgen exited with {self.process.wait()}: {procs.tail(self.log_path, 1500)}"
        self.ready.set()
        self.done.set()

    def send(self, command: str) -> None:
        try:
            self._stdin.write(command + "\n")
            self._stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        if not self.ready.wait(timeout):
            raise LoadGenError(f"{self.spec['role']} not ready within {timeout:.0f}s")
        if self.error:
            raise LoadGenError(f"{self.spec['role']}: {self.error}")

    def result(self, timeout: float) -> dict:
        if not self.done.wait(timeout):
            raise LoadGenError(f"{self.spec['role']} gave no result within {timeout:.0f}s")
        if self.error:
            raise LoadGenError(f"{self.spec['role']}: {self.error}")
        self.process.wait(10)
        assert self.outcome is not None  # done is set with an outcome or an error
        return self.outcome

    def stop(self) -> None:
        procs.stop(self.process, timeout=5)


def run_once(spec: dict, python: str | None = None, timeout: float = 90.0,
             log_path: Path | None = None) -> dict:
    """A loadgen role that needs no go/drain (wait-topic): run, return its result."""
    client = Client(spec, python, log_path=log_path)
    try:
        client._stdin.close()
        return client.result(timeout)
    finally:
        client.stop()

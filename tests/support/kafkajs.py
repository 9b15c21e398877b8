"""KafkaJS (npm `kafkajs`, a JavaScript implementation of the protocol) as a
test client: the Node drivers in tests/compat/kafkajs/*.mjs read one JSON
request on stdin and answer one JSON line on stdout. `make kafkajs-deps`
installs the pinned packages (package-lock.json) with `npm ci`."""
from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.compat import Message

DRIVERS = Path(__file__).resolve().parent.parent / "compat" / "kafkajs"
NODE = shutil.which("node")
INSTALLED = (DRIVERS / "node_modules" / "kafkajs" / "package.json").exists()
requires_kafkajs = pytest.mark.skipif(
    NODE is None or not INSTALLED,
    reason="KafkaJS is not installed: `make kafkajs-deps` (Debian's nodejs and npm, then npm ci "
           "in tests/compat/kafkajs), which `make test` runs")

# A driver's own deadline (lib.mjs) ends it first; the process limit is a
# backstop a little above it.
DEFAULT_DEADLINE_MS = 60_000


class KafkaJSFailed(AssertionError):
    pass


def connection(bootstrap: str, **extra) -> dict:
    """The `connection` of a request: the brokers of a bootstrap list
    ("host:port,host:port"), plus ssl / sasl / logLevel / retries."""
    return {"brokers": bootstrap.split(","), **extra}


def run(driver: str, request: dict, deadline_ms: int = DEFAULT_DEADLINE_MS) -> dict:
    """Run tests/compat/kafkajs/<driver>.mjs with ``request``; its answer."""
    assert NODE is not None
    payload = json.dumps({**request, "deadlineMs": deadline_ms})
    done = subprocess.run([NODE, str(DRIVERS / f"{driver}.mjs")], input=payload, capture_output=True,
                          text=True, cwd=DRIVERS, timeout=deadline_ms / 1000 + 15)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise KafkaJSFailed(f"{driver}.mjs exited {done.returncode}\nstdout: {done.stdout[-2000:]}\n"
                            f"stderr: {done.stderr[-4000:]}")
    return json.loads(lines[-1])


def encode(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def decode(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def outgoing(message: Message) -> dict:
    return {"partition": message.partition, "key": encode(message.key), "value": encode(message.value),
            "headers": [[name, encode(value)] for name, value in message.headers],
            "timestamp": message.timestamp}


def incoming(record: dict) -> Message:
    return Message(record["partition"], decode(record["key"]), decode(record["value"]),
                   tuple((name, decode(value)) for name, value in record["headers"]), record["timestamp"])


def produce(conn: dict, topic: str, messages: list[Message], **options) -> dict:
    """Every message sent to its partition; fails on a KafkaJS error."""
    answer = run("produce", {"connection": conn, "topic": topic,
                             "messages": [outgoing(m) for m in messages], **options})
    if "error" in answer:
        raise KafkaJSFailed(f"produce failed: {answer['error']}")
    return answer


def consume(conn: dict, topic: str, count: int, group_id: str, **options) -> list[dict]:
    """Up to ``count`` records read by a consumer group (each with its offset)."""
    answer = run("consume", {"connection": conn, "topic": topic, "count": count, "groupId": group_id,
                             **options})
    if "error" in answer:
        raise KafkaJSFailed(f"consume failed: {answer['error']}")
    return answer["messages"]


class Member:
    """A KafkaJS group member process (member.mjs) that prints one JSON line
    per event; SIGKILL ends it without a word to the group, SIGTERM leaves."""

    def __init__(self, request: dict, log_path: Path):
        assert NODE is not None
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.process = subprocess.Popen([NODE, str(DRIVERS / "member.mjs")], stdin=subprocess.PIPE,
                                        stdout=self._log, stderr=subprocess.STDOUT, text=True,
                                        cwd=DRIVERS)
        assert self.process.stdin is not None
        # The driver's own deadline is a backstop for a test that forgets it.
        self.process.stdin.write(json.dumps({"deadlineMs": 120_000, **request}))
        self.process.stdin.close()

    def events(self) -> list[dict]:
        events = []
        for line in self.log_path.read_text().splitlines():
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line being written
        return events

    def consumed(self) -> list[dict]:
        return [e for e in self.events() if e["event"] == "message"]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self._log.close()

    def stop(self, timeout: float = 20.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise KafkaJSFailed(f"member ignored SIGTERM for {timeout}s") from None
        self._log.close()
        return self.process.returncode

    def output(self) -> str:
        return self.log_path.read_text()[-4000:] if self.log_path.exists() else ""


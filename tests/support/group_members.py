"""Group members as processes (tests/support/group_worker.py) and what
their JSON lines say: current assignments, consumed offsets, rebalances."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Member:
    name: str
    out: Path
    process: subprocess.Popen
    lines: list[dict] = field(default_factory=list)

    def events(self) -> list[dict]:
        if self.out.exists():
            text = self.out.read_text()
            complete = text[:text.rfind("\n") + 1]
            self.lines = [json.loads(line) for line in complete.splitlines() if line]
        return self.lines

    def assignment(self) -> set[int]:
        owned: set[int] = set()
        for event in self.events():
            if event["event"] == "assign":
                owned |= set(event["partitions"])
            elif event["event"] == "revoke":
                owned -= set(event["partitions"])
        return owned

    def consumed(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in self.events() if e["event"] == "msg"]

    def commit_errors(self) -> list[dict]:
        return [e for e in self.events() if e["event"] == "commit_error"]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_member(name: str, tmp_path: Path, bootstrap: str, group: str, topic: str,
                 protocol: str = "consumer", max_seconds: float = 180.0) -> Member:
    out = tmp_path / f"{name}.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.group_worker", bootstrap, group, topic, str(out), protocol,
         str(max_seconds)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"{name}.err", "w"))
    return Member(name, out, process)


def assert_each_offset_once_per_commit(members: list[Member], killed: Member | None,
                                       expected: dict[int, int]) -> None:
    """Every offset of every partition consumed; an offset consumed twice
    only where the killed member recorded it and died before its commit
    (at most once per partition it owned)."""
    seen: dict[tuple[int, int], list[str]] = {}
    for member in members:
        for key in member.consumed():
            seen.setdefault(key, []).append(member.name)
    for partition, count in expected.items():
        missing = [o for o in range(count) if (partition, o) not in seen]
        assert not missing, f"partition {partition}: offsets never consumed {missing[:10]}"
    twice = {key: names for key, names in seen.items() if len(names) > 1}
    for (partition, offset), names in twice.items():
        assert killed is not None and killed.name in names and len(names) == 2, \
            f"{partition}@{offset} consumed by {names}"
    assert len({partition for partition, _ in twice}) == len(twice), f"more than one per partition: {twice}"

"""A history of operations, one JSON object a line, as Jepsen records one.

Every operation is written twice: its invocation (``type`` "invoke") and
its completion by the same ``process``: "ok" (it happened), "fail" (it
certainly did not) or "unknown" (it may have: a timeout, a lost
connection, a crash). A completion's ``value`` refines the invocation's.

    {"index": 7, "time": 1.25, "process": "producer-0", "type": "invoke",
     "f": "send", "value": [["send", "faults:1", "v17"]]}
    {"index": 9, "time": 1.31, "process": "producer-0", "type": "ok",
     "f": "send", "value": [["send", "faults:1", [42, "v17"]]]}

``f`` is one of:

* ``send``: micro-ops ``["send", key, value]``; completed as
  ``["send", key, [offset, value]]`` (offset null when unknown).
* ``poll``: ``[["poll"]]``; completed as ``[["poll", {key: [[offset, value],
  ...]}]]``. The final read of every partition after the faults is a poll
  by process "audit" whose completion also has ``"ends"``: {key: the high
  watermark (read_committed: last stable offset) it read up to}.
* ``txn``: sends and polls inside one transaction: "ok" committed, "fail"
  aborted (by the client, or refused), "unknown" neither is known. The
  poll comes before the transaction begins, so the invocation already
  holds its reads (``["poll", {key: ...}]``) and ``"offsets"`` (the
  group's offsets the transaction will commit): a processor killed
  before the completion leaves them known.
* ``assign``: the partitions a consumer holds changed (a rebalance or a
  restart); ``value`` is the new list of keys. Its reads start over.
* ``commit``: a consumer group's offsets, ``{key: offset}``.
* nemesis operations (process "nemesis"): ``f`` the fault, invoke when it
  starts and ok when it is undone, ``value`` what it did.

Keys are "<topic>:<partition>"; values are unique strings. Ops of a
consumer group carry ``"group"``. ``time`` is seconds since the history
began, on the monotonic clock.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

Op = dict[str, Any]
INVOKE, OK, FAIL, UNKNOWN = "invoke", "ok", "fail", "unknown"
COMPLETIONS = (OK, FAIL, UNKNOWN)


def key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def split_key(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition(":")
    return topic, int(partition)


class History:
    """An append-only history, kept in memory and written through to a
    JSON lines file (flushed per op, so a crash of the runner keeps what
    happened before it). Safe to share between threads."""

    def __init__(self, path: Path | None = None):
        self.ops: list[Op] = []
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._file = open(path, "w") if path is not None else None  # noqa: SIM115 - closed by close()

    def record(self, process: str, type_: str, f: str, value: Any = None, **extra: Any) -> Op:
        with self._lock:
            op: Op = {"index": len(self.ops), "time": round(time.monotonic() - self._start, 6),
                      "process": process, "type": type_, "f": f, "value": value, **extra}
            self.ops.append(op)
            if self._file is not None:
                self._file.write(json.dumps(op) + "\n")
                self._file.flush()
            return op

    def invoke(self, process: str, f: str, value: Any = None, **extra: Any) -> Op:
        return self.record(process, INVOKE, f, value, **extra)

    def complete(self, invocation: Op, type_: str, value: Any = None, **extra: Any) -> Op:
        """The completion of ``invocation`` (same process and f)."""
        assert type_ in COMPLETIONS, type_
        return self.record(invocation["process"], type_, invocation["f"],
                           invocation["value"] if value is None else value,
                           **{k: v for k, v in invocation.items()
                              if k not in ("index", "time", "process", "type", "f", "value")},
                           **extra)

    @property
    def base(self) -> float:
        """The monotonic time this history's ``time`` counts from."""
        return self._start

    def now(self) -> float:
        return time.monotonic() - self._start

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def load(path: Path) -> list[Op]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write(path: Path, ops: Iterable[Op]) -> None:
    with open(path, "w") as handle:
        for op in ops:
            handle.write(json.dumps(op) + "\n")


def pairs(ops: Iterable[Op]) -> Iterator[tuple[Op, Op | None]]:
    """(invocation, completion) in invocation order; completion None when
    the history ends first (the process never answered: unknown). A
    process has one operation open at a time, unless its ops carry an
    ``id`` (a producer with several sends in flight): then the id pairs
    them. A completion with no open invocation of its ``f`` is an event
    (a rebalance seen inside a poll): it comes as (op, op)."""
    open_ops: dict[str, Op] = {}
    completed: dict[int, Op] = {}
    invocations: list[Op] = []
    for op in ops:
        slot = f"{op['process']}#{op['id']}" if "id" in op else op["process"]
        if op["type"] == INVOKE:
            open_ops[slot] = op
            invocations.append(op)
        elif slot in open_ops and open_ops[slot]["f"] == op["f"]:
            completed[open_ops.pop(slot)["index"]] = op
        else:
            invocations.append(op)
            completed[op["index"]] = op
    for invocation in invocations:
        yield invocation, completed.get(invocation["index"])

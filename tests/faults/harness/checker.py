"""The checker: anomalies in a history of sends, polls and transactions
(history.py), judged the way Jepsen's Kafka workload judges them.

Writes are known by their value (each value is written once), reads by
(key, offset, value). From every read and every write whose offset came
back, the checker reports:

* ``inconsistent-offset``: one offset of a partition seen holding two
  values.
* ``duplicate``: one value at two offsets (or in two partitions).
* ``lost-write``: an acknowledged write (an "ok" send, or a send of a
  committed transaction) missing from the final read of its partition
  (the "audit" poll), which went past its offset; without an audit,
  missing although a higher offset of its partition was read.
  ``unseen-at-end``: an acknowledged write at or above the end the audit
  read to (the partition's high watermark or last stable offset never
  got past it: not lost yet, but not readable after the faults healed).
* ``failed-write-read``: a read of a value whose send failed for certain.
* ``G1a`` (aborted read): a read of a value written by an aborted
  transaction. ``precommitted-read``: a transaction reading its own write.
* ``phantom-read``: a read of a value nobody sent.
* ``poll-skip`` / ``nonmonotonic-poll``: a consumer's successive reads of
  a partition that jump past values in the partition's order (as every
  read saw it), or go back, without a change of assignment between them.
* ``group-skip``: a value below a group's committed offset that no member
  of the group read (at-least-once broken; for a transactional group,
  no committed transaction read it). ``group-duplicate``: a value read by
  two committed transactions of one group (exactly-once broken). A
  transaction of unknown outcome (its processor killed while it ended,
  say) counts as committed once a read saw one of its writes: with
  read_committed, only a committed transaction's writes are readable (a
  read of an aborted one is G1a); its reads and offsets are then those of
  its completion, or of its invocation when it has none.
* ``G1b`` (intermediate read): an operation whose last read of a
  partition is a transaction's write to it that the transaction followed
  with another write to the same partition, unread.
* ``G1c`` (circular information flow): a cycle of committed transactions
  through write-write (ww: the next transaction's write follows in a
  partition) and write-read (wr: a transaction's last read of a partition
  is another's write) dependencies, with at least one wr.
* ``G0`` (write cycle): a cycle of ww dependencies alone. Kafka's protocol
  does not isolate transactional writes from one another (two producers'
  appends interleave, and each partition orders them by arrival), so G0
  is reported but ALLOWED, as Jepsen's Redpanda 21.10.1 analysis explains.

Kafka's read_committed is not serializable: anti-dependency (rw) cycles,
G-single and G2, are allowed, and not searched for.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tests.faults.harness.history import FAIL, INVOKE, OK, UNKNOWN, Op, pairs

ALLOWED = frozenset({"G0"})
EXAMPLES_KEPT = 20


@dataclass
class Write:
    op: int            # index of the invocation
    process: str
    type: str          # ok, fail or unknown (no completion: unknown)
    key: str
    value: str
    offset: int | None
    txn: bool
    position: int      # index of this send among the op's micro-ops


@dataclass
class Read:
    op: int
    process: str
    type: str
    f: str
    key: str
    offset: int
    value: str
    group: str | None


@dataclass
class Result:
    anomalies: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    stats: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, example: Any) -> None:
        self.counts[name] += 1
        if len(self.anomalies[name]) < EXAMPLES_KEPT:
            self.anomalies[name].append(example)

    @property
    def violations(self) -> dict[str, int]:
        """Anomalies that break a guarantee Kafka gives (all but ALLOWED)."""
        return {name: n for name, n in self.counts.items() if name not in ALLOWED}

    @property
    def valid(self) -> bool:
        return not self.violations

    def summary(self) -> dict[str, Any]:
        return {"valid": self.valid, "violations": dict(self.violations),
                "allowed": {n: c for n, c in self.counts.items() if n in ALLOWED},
                "stats": self.stats,
                "examples": {n: list(v) for n, v in self.anomalies.items()}}


class _Parsed:
    """The history flattened into writes, reads, ops and assignments."""

    def __init__(self, ops: list[Op]):
        self.writes: dict[str, Write] = {}
        self.duplicate_sends: list[str] = []
        self.reads: list[Read] = []
        self.completions: list[tuple[Op, Op]] = []   # (invocation, completion), completion order
        self.audit: Op | None = None
        self.op_type: dict[int, str] = {}
        self.op_of: dict[int, tuple[Op, Op | None]] = {}
        for invocation, completion in pairs(ops):
            type_ = completion["type"] if completion is not None else UNKNOWN
            self.op_type[invocation["index"]] = type_
            self.op_of[invocation["index"]] = (invocation, completion)
            value = (completion or invocation)["value"]
            if invocation["f"] in ("send", "txn") and isinstance(value, list):
                self._writes(invocation, type_, value)
        by_completion = sorted(((inv, comp) for inv, comp in self.op_of.values() if comp is not None),
                               key=lambda pair: pair[1]["index"])
        for invocation, completion in by_completion:
            self.completions.append((invocation, completion))
            if invocation["process"] == "audit" and completion["type"] == OK:
                self.audit = completion
            if completion["f"] in ("poll", "txn") and isinstance(completion["value"], list):
                self._reads(invocation, completion, completion["type"])
        for invocation, completion in self.op_of.values():
            if completion is None and invocation["f"] == "txn" and isinstance(invocation["value"], list):
                self._reads(invocation, invocation, UNKNOWN)

    def _writes(self, invocation: Op, type_: str, value: list) -> None:
        for position, micro in enumerate(value):
            if micro[0] != "send":
                continue
            _, key_, sent = micro
            offset, payload = (sent[0], sent[1]) if isinstance(sent, list) else (None, sent)
            if payload in self.writes:
                self.duplicate_sends.append(payload)
                continue
            self.writes[payload] = Write(invocation["index"], invocation["process"], type_, key_, payload,
                                         offset, invocation["f"] == "txn", position)

    def _reads(self, invocation: Op, source: Op, type_: str) -> None:
        """The reads of ``source``'s poll micro-ops (its completion, or the
        invocation of a transaction that has none)."""
        for micro in source["value"]:
            if micro[0] != "poll" or len(micro) < 2:
                continue
            for key_, entries in micro[1].items():
                for offset, value in entries:
                    self.reads.append(Read(invocation["index"], invocation["process"], type_,
                                           invocation["f"], key_, offset, value, invocation.get("group")))

    def committed_transactions(self) -> set[int]:
        """Transactions that committed: "ok", or of unknown outcome with a
        write that some read saw (every read of a history is read_committed)."""
        seen = {read.value for read in self.reads}
        settled = {write.op for write in self.writes.values()
                   if write.txn and write.type == UNKNOWN and write.value in seen}
        return settled | {op for op, type_ in self.op_type.items()
                          if type_ == OK and self.op_of[op][0]["f"] == "txn"}


def check(ops: list[Op]) -> Result:
    """Every analysis of the module docstring over ``ops``."""
    parsed = _Parsed(ops)
    result = Result()
    _stats(ops, parsed, result)
    for value in parsed.duplicate_sends:
        result.add("duplicate-send-in-history", value)
    order = _offsets(parsed, result)
    _read_sources(parsed, result)
    _lost_writes(parsed, order, result)
    _poll_continuity(parsed, order, result)
    _groups(parsed, order, result)
    _intermediate_reads(parsed, result)
    _cycles(parsed, result)
    return result


def _stats(ops: list[Op], parsed: _Parsed, result: Result) -> None:
    by_type: dict[str, int] = defaultdict(int)
    by_f: dict[str, int] = defaultdict(int)
    faults = client_kills = 0
    for op in ops:
        if op["process"] == "nemesis":
            if op["type"] == INVOKE and op["f"] == "kill-client":
                client_kills += 1
            elif op["type"] == INVOKE and not op["f"].startswith("undo-"):
                faults += 1
            continue
        if op["type"] != INVOKE:
            by_type[op["type"]] += 1
        else:
            by_f[op["f"]] += 1
    result.stats = {"operations": sum(by_f.values()), "by_f": dict(by_f), "completions": dict(by_type),
                    "faults": faults, "client_kills": client_kills, "writes": len(parsed.writes),
                    "acknowledged_writes": sum(w.type == OK for w in parsed.writes.values()),
                    "reads": len(parsed.reads)}


def _offsets(parsed: _Parsed, result: Result) -> dict[str, list[str]]:
    """Inconsistent offsets and duplicates; returns each key's values in
    offset order as every read saw them (the order consumers must follow)."""
    at: dict[tuple[str, int], set[str]] = defaultdict(set)
    places: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for write in parsed.writes.values():
        if write.offset is not None and write.offset >= 0:
            at[(write.key, write.offset)].add(write.value)
            places[write.value].add((write.key, write.offset))
    read_at: dict[str, dict[int, str]] = defaultdict(dict)
    for read in parsed.reads:
        at[(read.key, read.offset)].add(read.value)
        places[read.value].add((read.key, read.offset))
        read_at[read.key].setdefault(read.offset, read.value)
    for (key_, offset), values in sorted(at.items()):
        if len(values) > 1:
            result.add("inconsistent-offset", {"key": key_, "offset": offset, "values": sorted(values)})
    for value, where in places.items():
        if len(where) > 1:
            result.add("duplicate", {"value": value, "at": sorted(where)})
    return {key_: [offsets[o] for o in sorted(offsets)] for key_, offsets in read_at.items()}


def _read_sources(parsed: _Parsed, result: Result) -> None:
    for read in parsed.reads:
        write = parsed.writes.get(read.value)
        where = {"key": read.key, "offset": read.offset, "value": read.value, "reader": read.op}
        if write is None:
            result.add("phantom-read", where)
        elif write.type == FAIL:
            result.add("G1a" if write.txn else "failed-write-read", {**where, "writer": write.op})
        elif read.f == "txn" and write.op == read.op:
            result.add("precommitted-read", where)


def _lost_writes(parsed: _Parsed, order: dict[str, list[str]], result: Result) -> None:
    read_values = {read.value for read in parsed.reads}
    audit_values: set[str] = set()
    ends: dict[str, int] = {}
    if parsed.audit is not None:
        ends = parsed.audit.get("ends", {})
        for micro in parsed.audit["value"]:
            if micro[0] == "poll":
                audit_values.update(v for entries in micro[1].values() for _, v in entries)
    highest: dict[str, int] = defaultdict(lambda: -1)
    for read in parsed.reads:
        highest[read.key] = max(highest[read.key], read.offset)
    for write in parsed.writes.values():
        if write.type != OK:
            continue
        if write.key in ends:
            lost = write.value not in audit_values
            if lost and write.offset is not None and write.offset >= ends[write.key]:
                result.add("unseen-at-end", {"key": write.key, "offset": write.offset, "value": write.value,
                                             "writer": write.op, "audit_end": ends[write.key]})
                continue
        else:
            lost = (write.value not in read_values and write.offset is not None
                    and write.offset <= highest[write.key])
        if lost:
            result.add("lost-write", {"key": write.key, "offset": write.offset, "value": write.value,
                                      "writer": write.op, "audit_end": ends.get(write.key)})


def _poll_continuity(parsed: _Parsed, order: dict[str, list[str]], result: Result) -> None:
    """Each process's reads of a key follow the key's order one step at a
    time, until its assignment changes."""
    index = {key_: {value: i for i, value in enumerate(values)} for key_, values in order.items()}
    last: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)   # process -> key -> (index, op)
    for invocation, completion in parsed.completions:
        process = invocation["process"]
        if completion["f"] == "assign" or process == "audit":
            last.pop(process, None)
            continue
        if completion["f"] not in ("poll", "txn") or not isinstance(completion["value"], list):
            continue
        for micro in completion["value"]:
            if micro[0] != "poll" or len(micro) < 2:
                continue
            for key_, entries in micro[1].items():
                for offset, value in entries:
                    i = index[key_].get(value)
                    if i is None:
                        continue
                    previous = last[process].get(key_)
                    if previous is not None:
                        where = {"process": process, "key": key_, "op": invocation["index"],
                                 "previous_op": previous[1], "offset": offset,
                                 "after": order[key_][previous[0]], "value": value}
                        if i <= previous[0]:
                            result.add("nonmonotonic-poll", where)
                        elif i > previous[0] + 1:
                            result.add("poll-skip", {**where, "skipped": order[key_][previous[0] + 1:i][:10]})
                    last[process][key_] = (i, invocation["index"])


def _groups(parsed: _Parsed, order: dict[str, list[str]], result: Result) -> None:
    """At-least-once per group (every value under the committed offset was
    read by a member), and exactly-once for transactional groups."""
    committed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(lambda: -1))
    transactional = {inv["group"] for inv, _ in parsed.op_of.values() if inv["f"] == "txn" and "group" in inv}
    transactions = parsed.committed_transactions()
    for invocation, completion in parsed.op_of.values():
        group = invocation.get("group")
        if group is None or invocation["f"] not in ("commit", "txn"):
            continue
        if invocation["f"] == "txn" and invocation["index"] in transactions:
            offsets = (completion or invocation).get("offsets")
        elif invocation["f"] == "commit" and completion is not None and completion["type"] == OK:
            offsets = completion["value"]
        else:
            continue
        if isinstance(offsets, dict):
            for key_, offset in offsets.items():
                committed[group][key_] = max(committed[group][key_], offset)
    readers: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for read in parsed.reads:
        if read.group is None:
            continue
        if read.group in transactional and not (read.f == "txn" and read.op in transactions):
            continue
        if read.group not in transactional and read.type != OK:
            continue
        readers[read.group][read.value].append(read.op)
    offset_of = {(read.key, read.value): read.offset for read in parsed.reads}
    for group, offsets in committed.items():
        for key_, end in offsets.items():
            for value in order.get(key_, []):
                if offset_of[(key_, value)] < end and value not in readers[group]:
                    result.add("group-skip", {"group": group, "key": key_, "value": value,
                                              "offset": offset_of[(key_, value)], "committed": end})
    for group in transactional:
        for value, ops in readers[group].items():
            if len(set(ops)) > 1:
                result.add("group-duplicate", {"group": group, "value": value, "read_by": sorted(set(ops))})


def _intermediate_reads(parsed: _Parsed, result: Result) -> None:
    later: dict[tuple[int, str], list[str]] = defaultdict(list)   # (writer op, key) -> its values in order
    for write in sorted(parsed.writes.values(), key=lambda w: (w.op, w.position)):
        if write.txn:
            later[(write.op, write.key)].append(write.value)
    by_op: dict[tuple[int, str], list[Read]] = defaultdict(list)
    for read in parsed.reads:
        if read.type == OK:
            by_op[(read.op, read.key)].append(read)
    for (op, key_), reads in by_op.items():
        last = max(reads, key=lambda r: r.offset)
        write = parsed.writes.get(last.value)
        if write is None or not write.txn or write.op == op or write.type == FAIL:
            continue
        written = later[(write.op, key_)]
        seen = {r.value for r in reads}
        unread = [v for v in written[written.index(last.value) + 1:] if v not in seen]
        if unread:
            result.add("G1b", {"reader": op, "key": key_, "read": last.value, "writer": write.op,
                               "unread_later_writes": unread})


def _cycles(parsed: _Parsed, result: Result) -> None:
    """ww and wr dependencies between committed transactions; G0 / G1c."""
    committed = {w.op for w in parsed.writes.values() if w.txn and w.type == OK}
    ww: dict[int, set[int]] = defaultdict(set)
    wr: dict[int, set[int]] = defaultdict(set)
    per_key: dict[str, list[Write]] = defaultdict(list)
    for write in parsed.writes.values():
        if write.op in committed and write.offset is not None:
            per_key[write.key].append(write)
    for writes in per_key.values():
        writes.sort(key=lambda w: w.offset)
        for before, after in zip(writes, writes[1:]):
            if before.op != after.op:
                ww[before.op].add(after.op)
    highest: dict[tuple[int, str], Read] = {}
    for read in parsed.reads:
        if read.f == "txn" and read.type == OK:
            slot = (read.op, read.key)
            if slot not in highest or read.offset > highest[slot].offset:
                highest[slot] = read
    for (reader, _), read in highest.items():
        write = parsed.writes.get(read.value)
        if write is not None and write.op in committed and write.op != reader:
            wr[write.op].add(reader)
    for component in _components(ww):
        result.add("G0", {"transactions": sorted(component), "cycle": _cycle(component, ww, ww)})
    both = {op: ww[op] | wr[op] for op in set(ww) | set(wr)}
    for component in _components(both):
        inside = [(a, b) for a in component for b in wr.get(a, ()) if b in component]
        if inside:
            result.add("G1c", {"transactions": sorted(component), "wr": inside[:5],
                               "cycle": _cycle(component, both, wr)})


def _components(graph: dict[int, set[int]]) -> list[set[int]]:
    """Strongly connected components of more than one vertex (Tarjan's,
    iterative: histories hold thousands of transactions)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: list[set[int]] = []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            vertex, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[vertex] = min(low[vertex], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[vertex])
            if low[vertex] == index[vertex]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == vertex:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _cycle(component: set[int], graph: dict[int, set[int]], first: dict[int, set[int]]) -> list[int]:
    """One cycle inside ``component`` starting with an edge of ``first``."""
    start, step = next((a, b) for a in sorted(component) for b in sorted(first.get(a, ())) if b in component)
    previous = {step: start}
    queue = [step]
    while queue:
        vertex = queue.pop(0)
        if vertex == start:
            break
        for child in sorted(graph.get(vertex, ())):
            if child in component and child not in previous:
                previous[child] = vertex
                queue.append(child)
    path = [start]
    vertex = previous[start]
    while vertex != start:
        path.append(vertex)
        vertex = previous[vertex]
    return [start, *reversed(path[1:]), start]

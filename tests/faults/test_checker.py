"""The fault suite's checker on hand-made histories: each anomaly it
names is reported in a history built to contain it, and nothing is
reported in clean ones (including the legal look-alikes: gaps left by
transaction markers, a consumer that starts over after a new
assignment, a write cycle that Kafka's protocol allows)."""
from __future__ import annotations

from tests.faults.harness.checker import ALLOWED, check
from tests.faults.harness.history import History, load, pairs, write

X, Y = "t:0", "t:1"


class Builder:
    """Operations as (invocation, completion) pairs, written in order."""

    def __init__(self):
        self.history = History()

    def op(self, process: str, f: str, invoked, type_: str, completed=None, **extra):
        invocation = self.history.invoke(process, f, invoked, **extra)
        return self.history.complete(invocation, type_, completed)

    def send(self, key: str, value: str, offset: int | None, type_: str = "ok", process: str = "p"):
        sent = [offset, value] if offset is not None else value
        return self.op(process, "send", [["send", key, value]], type_, [["send", key, sent]])

    def poll(self, reads: dict, process: str = "c", **extra):
        return self.op(process, "poll", [["poll"]], "ok", [["poll", reads]], **extra)

    def txn(self, micro: list, type_: str = "ok", process: str = "t", **extra):
        invoked = [m[:2] + [m[2][1]] if m[0] == "send" else ["poll"] for m in micro]
        return self.op(process, "txn", invoked, type_, micro, **extra)

    def audit(self, reads: dict):
        ends = {k: (v[-1][0] + 1 if v else 0) for k, v in reads.items()}
        return self.op("audit", "poll", [["poll"]], "ok", [["poll", reads]], ends=ends)

    def check(self):
        return check(self.history.ops)


def clean_producer_history() -> Builder:
    b = Builder()
    for offset, value in enumerate(["a", "b", "c"]):
        b.send(X, value, offset)
    b.op("c", "assign", [X], "ok")
    b.poll({X: [[0, "a"], [1, "b"]]})
    b.poll({X: [[2, "c"]]})
    b.audit({X: [[0, "a"], [1, "b"], [2, "c"]]})
    return b


def test_clean_history_has_no_anomaly():
    result = clean_producer_history().check()
    assert result.valid, result.summary()
    assert result.counts == {}
    assert result.stats["acknowledged_writes"] == 3 and result.stats["operations"] == 7


def test_gaps_of_markers_are_not_skips():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", 5)   # 1..4: markers and aborted records, invisible
    b.poll({X: [[0, "a"], [5, "b"]]})
    b.audit({X: [[0, "a"], [5, "b"]]})
    assert b.check().valid


def test_lost_acknowledged_write_is_reported():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", 1)
    b.send(X, "c", 2)
    b.audit({X: [[0, "a"], [2, "c"]]})
    result = b.check()
    assert result.counts == {"lost-write": 1}
    assert result.anomalies["lost-write"][0]["value"] == "b"


def test_acknowledged_write_past_the_audit_end_is_unseen():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", 1)
    b.op("audit", "poll", [["poll"]], "ok", [["poll", {X: [[0, "a"]]}]], ends={X: 1})
    assert b.check().counts == {"unseen-at-end": 1}


def test_lost_write_without_audit_needs_a_higher_read():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", 1)
    b.send(X, "c", 2)
    b.poll({X: [[0, "a"], [2, "c"]]})
    assert b.check().counts["lost-write"] == 1


def test_unknown_write_missing_is_not_lost():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", None, type_="unknown")
    b.audit({X: [[0, "a"]]})
    assert b.check().valid


def test_duplicate_is_reported():
    b = Builder()
    b.send(X, "a", 0)
    b.audit({X: [[0, "a"], [1, "a"]]})
    assert b.check().counts["duplicate"] == 1


def test_offset_holding_two_values_is_reported():
    b = Builder()
    b.send(X, "a", 0)
    b.send(X, "b", 1)
    b.poll({X: [[0, "a"], [1, "c"]]})
    b.send(X, "c", None, type_="unknown")
    result = b.check()
    assert result.counts["inconsistent-offset"] == 1
    assert result.anomalies["inconsistent-offset"][0] == {"key": X, "offset": 1, "values": ["b", "c"]}


def test_read_of_failed_write_is_reported():
    b = Builder()
    b.send(X, "a", None, type_="fail")
    b.poll({X: [[0, "a"]]})
    assert b.check().counts == {"failed-write-read": 1}


def test_aborted_read_g1a_is_reported():
    b = Builder()
    b.txn([["send", X, [0, "a"]]], type_="fail")
    b.poll({X: [[0, "a"]]})
    assert b.check().counts == {"G1a": 1}


def test_phantom_read_is_reported():
    b = Builder()
    b.poll({X: [[0, "ghost"]]})
    assert b.check().counts == {"phantom-read": 1}


def test_poll_skip_is_reported():
    b = clean_producer_history()
    b.op("c2", "assign", [X], "ok")
    b.poll({X: [[0, "a"]]}, process="c2")
    b.poll({X: [[2, "c"]]}, process="c2")
    result = b.check()
    assert result.counts == {"poll-skip": 1}
    assert result.anomalies["poll-skip"][0]["skipped"] == ["b"]


def test_skip_inside_one_poll_is_reported():
    b = clean_producer_history()
    b.poll({X: [[0, "a"], [2, "c"]]}, process="c2")
    assert b.check().counts == {"poll-skip": 1}


def test_nonmonotonic_poll_is_reported():
    b = clean_producer_history()
    b.poll({X: [[1, "b"]]}, process="c2")
    b.poll({X: [[0, "a"]]}, process="c2")
    assert b.check().counts == {"nonmonotonic-poll": 1}


def test_rebalance_inside_a_poll_is_an_event_and_the_poll_still_counts():
    b = clean_producer_history()
    poll = b.history.invoke("g1", "poll", [["poll"]], group="g")
    b.history.record("g1", "ok", "assign", [X], group="g")     # on_assign, inside the poll
    b.history.complete(poll, "ok", [["poll", {X: [[0, "a"], [1, "b"], [2, "c"]]}]])
    b.op("g1", "commit", {X: 3}, "ok", group="g")
    b.history.record("g1", "ok", "assign", [X], group="g", reason="rewind")
    b.poll({X: [[0, "a"]]}, process="g1", group="g")
    result = b.check()
    assert result.valid, result.summary()


def test_new_assignment_lets_a_consumer_start_over():
    b = clean_producer_history()
    b.poll({X: [[1, "b"]]}, process="c2")
    b.op("c2", "assign", [X], "ok")
    b.poll({X: [[0, "a"]]}, process="c2")
    assert b.check().valid


def test_group_skip_is_reported():
    b = clean_producer_history()
    b.poll({X: [[0, "a"]]}, process="g1", group="g")
    b.op("g1", "commit", {X: 1}, "ok", group="g")
    b.op("g2", "assign", [X], "ok", group="g")
    b.poll({X: [[2, "c"]]}, process="g2", group="g")
    b.op("g2", "commit", {X: 3}, "ok", group="g")
    result = b.check()
    assert result.counts == {"group-skip": 1}
    assert result.anomalies["group-skip"][0]["value"] == "b"


def test_group_that_reads_everything_it_commits_is_clean():
    b = clean_producer_history()
    b.poll({X: [[0, "a"], [1, "b"]]}, process="g1", group="g")
    b.op("g1", "commit", {X: 2}, "ok", group="g")
    b.op("g2", "assign", [X], "ok", group="g")
    b.poll({X: [[1, "b"], [2, "c"]]}, process="g2", group="g")   # at-least-once: b again is fine
    b.op("g2", "commit", {X: 3}, "ok", group="g")
    assert b.check().valid


def test_value_processed_by_two_committed_transactions_is_reported():
    b = Builder()
    b.send(X, "a", 0)
    b.txn([["poll", {X: [[0, "a"]]}], ["send", Y, [0, "out-1"]]], process="t1", group="g", offsets={X: 1})
    b.op("t2", "assign", [X], "ok", group="g")
    b.txn([["poll", {X: [[0, "a"]]}], ["send", Y, [1, "out-2"]]], process="t2", group="g", offsets={X: 1})
    b.audit({X: [[0, "a"]], Y: [[0, "out-1"], [1, "out-2"]]})
    assert b.check().counts == {"group-duplicate": 1}


def test_aborted_attempt_then_committed_one_is_exactly_once():
    b = Builder()
    b.send(X, "a", 0)
    b.txn([["poll", {X: [[0, "a"]]}], ["send", Y, [0, "out-1"]]], type_="fail", process="t1", group="g",
          offsets={X: 1})
    b.op("t1", "assign", [X], "ok", group="g")
    b.txn([["poll", {X: [[0, "a"]]}], ["send", Y, [2, "out-2"]]], process="t1", group="g", offsets={X: 1})
    b.audit({X: [[0, "a"]], Y: [[2, "out-2"]]})
    result = b.check()
    assert result.valid, result.summary()


def rewound_processor_killed_while_ending(b: Builder) -> None:
    """t1 reads a and b, aborts, rewinds and reads them again in a
    transaction it never completes (killed once its EndTxn was sent);
    t2 takes the partition over and commits offsets past a and b."""
    b.send(X, "a", 0)
    b.send(X, "b", 1)
    b.txn([["poll", {X: [[0, "a"], [1, "b"]]}], ["send", Y, [0, "out-1"]]], type_="fail", process="t1",
          group="g", offsets={X: 2})
    b.op("t1", "assign", [X], "ok", group="g")
    b.history.invoke("t1", "txn", [["poll", {X: [[0, "a"], [1, "b"]]}], ["send", Y, "out-2"]], group="g",
                     offsets={X: 2})
    b.send(X, "c", 3)
    b.op("t2", "assign", [X], "ok", group="g")


def test_transaction_of_unknown_outcome_whose_write_was_read_committed_its_reads():
    b = Builder()
    rewound_processor_killed_while_ending(b)
    b.txn([["poll", {X: [[3, "c"]]}], ["send", Y, [4, "out-3"]]], process="t2", group="g", offsets={X: 4})
    b.audit({X: [[0, "a"], [1, "b"], [3, "c"]], Y: [[2, "out-2"], [4, "out-3"]]})
    result = b.check()
    assert result.valid, result.summary()


def test_transaction_of_unknown_outcome_nobody_saw_did_not_read_for_its_group():
    b = Builder()
    rewound_processor_killed_while_ending(b)
    b.txn([["poll", {X: [[3, "c"]]}], ["send", Y, [4, "out-3"]]], process="t2", group="g", offsets={X: 4})
    b.audit({X: [[0, "a"], [1, "b"], [3, "c"]], Y: [[4, "out-3"]]})
    result = b.check()
    assert result.counts == {"group-skip": 2}
    assert [e["value"] for e in result.anomalies["group-skip"]] == ["a", "b"]


def test_committed_transaction_of_unknown_outcome_counts_once_for_exactly_once():
    b = Builder()
    rewound_processor_killed_while_ending(b)
    b.txn([["poll", {X: [[1, "b"], [3, "c"]]}], ["send", Y, [4, "out-3"]]], process="t2", group="g",
          offsets={X: 4})
    b.audit({X: [[0, "a"], [1, "b"], [3, "c"]], Y: [[2, "out-2"], [4, "out-3"]]})
    result = b.check()
    assert result.counts == {"group-duplicate": 1}
    assert result.anomalies["group-duplicate"][0]["value"] == "b"


def test_intermediate_read_g1b_is_reported():
    b = Builder()
    b.txn([["send", X, [0, "a1"]], ["send", X, [1, "a2"]]], process="t1")
    b.poll({X: [[0, "a1"]]})
    b.audit({X: [[0, "a1"], [1, "a2"]]})
    result = b.check()
    assert result.counts == {"G1b": 1}
    assert result.anomalies["G1b"][0]["unread_later_writes"] == ["a2"]


def test_circular_information_flow_g1c_is_reported():
    b = Builder()
    b.txn([["send", X, [0, "x1"]], ["poll", {Y: [[0, "y1"]]}]], process="t1")
    b.txn([["send", Y, [0, "y1"]], ["poll", {X: [[0, "x1"]]}]], process="t2")
    result = b.check()
    assert result.counts.get("G1c") == 1
    cycle = result.anomalies["G1c"][0]["cycle"]
    assert cycle[0] == cycle[-1] and len(cycle) == 3


def test_write_cycle_g0_is_reported_and_allowed():
    b = Builder()
    b.txn([["send", X, [0, "x1"]], ["send", Y, [1, "y1"]]], process="t1")
    b.txn([["send", X, [1, "x2"]], ["send", Y, [0, "y2"]]], process="t2")
    b.audit({X: [[0, "x1"], [1, "x2"]], Y: [[0, "y2"], [1, "y1"]]})
    result = b.check()
    assert result.counts == {"G0": 1} and "G0" in ALLOWED
    assert result.valid


def test_precommitted_read_is_reported():
    b = Builder()
    b.txn([["send", X, [0, "a"]], ["poll", {X: [[0, "a"]]}]], process="t1")
    assert b.check().counts == {"precommitted-read": 1}


def test_clean_transactional_chain_has_no_anomaly():
    b = Builder()
    b.txn([["send", X, [0, "x1"]], ["send", Y, [0, "y1"]]], process="t1")
    b.txn([["poll", {X: [[0, "x1"]]}], ["send", Y, [1, "y2"]]], process="t2", group="g", offsets={X: 1})
    b.txn([["poll", {Y: [[0, "y1"], [1, "y2"]]}], ["send", X, [3, "x2"]]], process="t3", group="g",
          offsets={Y: 2})
    b.audit({X: [[0, "x1"], [3, "x2"]], Y: [[0, "y1"], [1, "y2"]]})
    result = b.check()
    assert result.valid and result.counts == {}, result.summary()


def test_history_round_trips_through_json_lines(tmp_path):
    ops = clean_producer_history().history.ops
    write(tmp_path / "h.jsonl", ops)
    assert load(tmp_path / "h.jsonl") == ops
    recorder = History(tmp_path / "live.jsonl")
    recorder.complete(recorder.invoke("p", "send", [["send", X, "a"]]), "ok", [["send", X, [0, "a"]]])
    recorder.close()
    assert [op["type"] for op in load(tmp_path / "live.jsonl")] == ["invoke", "ok"]


def test_sends_in_flight_together_pair_by_id():
    h = History()
    first = h.invoke("p", "send", [["send", X, "a"]], id=1)
    second = h.invoke("p", "send", [["send", X, "b"]], id=2)
    h.complete(second, "ok", [["send", X, [0, "b"]]])
    h.complete(first, "fail")
    found = {inv["id"]: comp["type"] for inv, comp in pairs(h.ops)}
    assert found == {1: "fail", 2: "ok"}


def test_an_operation_without_completion_is_unknown():
    b = Builder()
    b.history.invoke("p", "send", [["send", X, "a"]])
    assert list(pairs(b.history.ops))[0][1] is None
    b.poll({X: [[0, "a"]]})
    assert b.check().valid

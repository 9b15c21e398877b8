"""The console's pure parts: how bytes are shown, consumer assignments read
back (kafka-python's encoder is the oracle), and the sampled history and
consumer lag on a real replica manager and group coordinator (a clock the test moves)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from kcore.console.history import ConsoleHistory
from kcore.console.messages import PREVIEW_BYTES, render
from kcore.coordinator.group.consumer_protocol import assigned_partitions
from kcore.coordinator.group.lag import HISTORY_POINTS, ConsumerLag
from kcore.coordinator.group.records import OffsetValue
from kcore.metrics import BrokerStats
from tests.support.batches import make_batch
from tests.support.group_coordinator import run

topic_names = st.text(st.characters(whitelist_categories=("Ll", "Nd")), min_size=1, max_size=20)
assignments = st.dictionaries(topic_names, st.lists(st.integers(0, 2**31 - 1), max_size=8), max_size=6)


def _assignment_bytes(assignment: dict[str, list[int]]) -> bytes:
    return ConsumerProtocolAssignment(version=0, assigned_partitions=list(assignment.items()),
                                      user_data=b"").encode()


@given(assignments)
def test_assigned_partitions_reads_what_kafka_python_writes(assignment):
    expected = [(topic, index) for topic, indexes in assignment.items() for index in indexes]
    assert assigned_partitions(_assignment_bytes(assignment)) == expected


def test_assigned_partitions_of_cut_or_foreign_bytes_is_none():
    data = _assignment_bytes({"orders": [0, 1, 2], "billing": [7]})
    user_data_at = len(data) - 4
    for cut in range(user_data_at):
        assert assigned_partitions(data[:cut]) is None, cut
    assert assigned_partitions(b"\x00\x00\x7f\xff\xff\xff") is None  # a count no bytes could hold


@pytest.mark.parametrize("data, kind, text", [
    (None, "null", None),
    (b"", "text", ""),
    (b"hello\tworld\n", "text", "hello\tworld\n"),
    ("caf\u00e9 \u2615".encode(), "text", "caf\u00e9 \u2615"),
    (b'{"a":[1,2]}', "json", '{\n  "a": [\n    1,\n    2\n  ]\n}'),
    (b"[1, 2", "text", "[1, 2"),                       # not JSON after all
    (b"\x00\xff\x10", "binary", "00 ff 10"),           # not UTF-8
    (b"ab\x01cd", "binary", "61 62 01 63 64"),         # UTF-8 with a control character
])
def test_render_shows_text_json_or_hex(data, kind, text):
    shown = render(data)
    assert (shown["type"], shown["text"], shown["truncated"]) == (kind, text, False)
    assert shown["size"] == (len(data) if data is not None else 0)


def test_render_cuts_large_values_without_splitting_a_character():
    value = "\u00e9" * PREVIEW_BYTES  # two bytes each: the cut lands inside one
    shown = render(value.encode())
    assert shown["type"] == "text" and shown["truncated"] and shown["size"] == 2 * PREVIEW_BYTES
    assert shown["text"] == "\u00e9" * (PREVIEW_BYTES // 2)
    big_json = json.dumps({"k": "v" * PREVIEW_BYTES}).encode()
    assert render(big_json)["type"] == "text" and render(big_json)["truncated"]  # no half JSON parsed


def test_history_rates_and_lag_come_from_the_broker_state(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("orders", 1)
        partition = node.replica_manager.get("orders", 0)
        stats, now = BrokerStats(), [1000.0]
        history = ConsoleHistory(stats, clock=lambda: now[0])
        lag = ConsumerLag(node.replica_manager, coordinator, clock=lambda: now[0])
        history.sample()
        lag.sample()
        stats.topics.record_produce("orders", 4000, 40)
        partition.append_records_to_leader(memoryview(make_batch(40)), 1)
        coordinator.commit_offsets("billing", "", None, -1, {("orders", 0): OffsetValue(15, -1, "", 0)})
        now[0] += 2.0
        history.sample()
        lag.sample()
        assert history.throughput() == [{"at": 1002.0, "seconds": 2.0, "bytes_in": 2000.0, "bytes_out": 0.0,
                                         "messages_in": 20.0}]
        assert history.topic_rates("orders") == {"bytes_in": 2000.0, "bytes_out": 0.0, "messages_in": 20.0}
        assert lag.lag_history("billing") == [(1002.0, 40 - 15)]
        for _ in range(HISTORY_POINTS + 10):
            now[0] += 1.0
            history.sample()
            lag.sample()
        assert len(history.throughput()) == HISTORY_POINTS
        assert len(lag.lag_history("billing")) == HISTORY_POINTS
    run(tmp_path, scenario)

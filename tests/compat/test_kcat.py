"""kcat (Debian's package, librdkafka underneath) against a real broker process.

kcat has no admin commands: topics come from auto-create and are checked
with the -L metadata listing. It reads with `-C -o beginning -e` (no group)
and prints JSON (-J), which keeps null and empty keys and values apart. It
cannot set per-message timestamps, so the timestamp lookups read data
written by confluent-kafka, and data kcat writes is checked against the
wall clock of the run. Data kcat writes is placed by librdkafka's key
partitioner, so those checks take partitions from what is read back.
"""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from tests.support import confluent
from tests.support.compat import (
    BROKER_ID,
    CODEC_ACKS,
    CODEC_COUNT,
    FULL_COUNT,
    KCAT,
    PARTITIONS,
    READ_TIMEOUT_S,
    Message,
    assert_same_partitions,
    broker_behind_proxy,
    by_partition,
    first_offset_at_or_after,
    make_messages,
    now_ms,
    offsets_for_times_messages,
    received,
    requires_kcat,
    start_broker,
    timestamp_probes,
    unique_topic,
)

pytestmark = requires_kcat

KCAT_HEADERS = (("source", b"kcat"), ("empty", b""))
PRODUCE_TIMEOUT_S = 120.0


def kcat(*args: str, stdin: bytes | None = None, timeout: float = READ_TIMEOUT_S) -> bytes:
    result = subprocess.run([KCAT, *args], input=stdin, capture_output=True, timeout=timeout)
    assert result.returncode == 0, f"kcat {' '.join(args)} exited {result.returncode}: {result.stderr[-2000:]!r}"
    return result.stdout


def kcat_lines(count: int, tag: str) -> list[tuple[bytes, bytes]]:
    return [(f"key-{index}".encode(), f"{tag}-{index:07d}:{'z' * (index % 37)}".encode()) for index in range(count)]


def kcat_produce(bootstrap: str, topic: str, lines: list[tuple[bytes, bytes]], *options: str) -> None:
    """One kcat process writes `key<TAB>value` lines with two fixed headers."""
    stdin = b"".join(key + b"\t" + value + b"\n" for key, value in lines)
    kcat("-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-H", "source=kcat", "-H", "empty=",
         "-X", "linger.ms=5", *options, stdin=stdin, timeout=PRODUCE_TIMEOUT_S)


def kcat_consume(bootstrap: str, topic: str) -> list[Message]:
    """Everything in the topic, with contiguous offsets from 0 per partition."""
    messages, next_offset = [], {}
    for line in kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-J").splitlines():
        record = json.loads(line)
        partition = record["partition"]
        assert record["offset"] == next_offset.get(partition, 0), f"partition {partition}: offset gap"
        next_offset[partition] = record["offset"] + 1
        assert record["tstype"] == "create"
        headers = record.get("headers") or []
        messages.append(received(partition, _encoded(record["key"]), _encoded(record["payload"]),
                                 [(headers[i], _encoded(headers[i + 1])) for i in range(0, len(headers), 2)],
                                 record["ts"]))
    return messages


def _encoded(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def assert_lines_once_in_order(lines: list[tuple[bytes, bytes]], consumed: list[Message],
                               written_between: tuple[int, int]) -> None:
    """Every line read back exactly once, with kcat's headers, in write order
    within its partition, and each key in one partition only."""
    position = {value: index for index, (_key, value) in enumerate(lines)}
    seen = [position.get(m.value) for m in consumed]
    assert None not in seen, f"{seen.count(None)} messages that were never written"
    assert len(seen) == len(set(seen)), f"{len(seen) - len(set(seen))} duplicates"
    assert len(seen) == len(lines), f"{len(lines) - len(seen)} lines missing"
    for partition, messages in by_partition(consumed).items():
        indexes = [position[m.value] for m in messages]
        assert indexes == sorted(indexes), f"partition {partition} out of write order"
    first, last = written_between
    for message in consumed:
        assert message.key == lines[position[message.value]][0]
        assert message.headers == KCAT_HEADERS
        assert first <= message.timestamp <= last, f"timestamp {message.timestamp} outside the run"


def test_metadata_listing_shows_the_broker_and_an_auto_created_topic(shared_broker):
    topic = unique_topic("kcat-list")
    kcat_produce(shared_broker.bootstrap, topic, kcat_lines(10, "list"))

    listing = json.loads(kcat("-L", "-b", shared_broker.bootstrap, "-J"))
    assert listing["brokers"] == [{"id": BROKER_ID, "name": shared_broker.bootstrap}]
    assert listing["controllerid"] == BROKER_ID
    [described] = [t for t in listing["topics"] if t["topic"] == topic]
    assert described.get("error") is None
    partitions = sorted(described["partitions"], key=lambda p: p["partition"])
    assert [p["partition"] for p in partitions] == list(range(PARTITIONS))
    for partition in partitions:
        assert partition["leader"] == BROKER_ID
        assert partition["replicas"] == [{"id": BROKER_ID}] and partition["isrs"] == [{"id": BROKER_ID}]


@pytest.mark.processes
def test_metadata_listing_of_one_topic_names_only_that_topic(shared_broker):
    topic = unique_topic("kcat-list-one")
    kcat_produce(shared_broker.bootstrap, topic, kcat_lines(5, "one"))
    listing = json.loads(kcat("-L", "-b", shared_broker.bootstrap, "-t", topic, "-J"))
    assert [t["topic"] for t in listing["topics"]] == [topic]


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_reads_100k_messages_with_keys_headers_and_timestamps_in_partition_order(shared_broker):
    topic, messages = unique_topic("kcat-100k"), make_messages(FULL_COUNT, "kcat")
    confluent.produce(shared_broker.bootstrap, topic, messages, **{"batch.size": 1_000_000})
    assert_same_partitions(messages, kcat_consume(shared_broker.bootstrap, topic))


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_writes_100k_keyed_messages_with_headers_read_back_once_in_partition_order(shared_broker):
    topic, lines = unique_topic("kcat-100k-written"), kcat_lines(FULL_COUNT, "kcat")
    started = now_ms()
    kcat_produce(shared_broker.bootstrap, topic, lines)
    consumed = kcat_consume(shared_broker.bootstrap, topic)
    assert_lines_once_in_order(lines, consumed, (started, now_ms()))
    assert len(by_partition(consumed)) == PARTITIONS, "the key partitioner spreads keys over every partition"


@pytest.mark.processes
@pytest.mark.parametrize("codec, acks", CODEC_ACKS)
def test_codec_and_acks_round_trip(shared_broker, codec, acks):
    topic, lines = unique_topic(f"kcat-{codec}-{acks}"), kcat_lines(CODEC_COUNT, f"kcat-{codec}")
    started = now_ms()
    kcat_produce(shared_broker.bootstrap, topic, lines, "-z", codec, "-X", f"acks={acks}")
    deadline = time.monotonic() + READ_TIMEOUT_S
    consumed = kcat_consume(shared_broker.bootstrap, topic)
    while len(consumed) < len(lines) and acks == "0" and time.monotonic() < deadline:
        time.sleep(0.1)  # acks=0 returns before the broker has appended
        consumed = kcat_consume(shared_broker.bootstrap, topic)
    assert_lines_once_in_order(lines, consumed, (started, now_ms()))


@pytest.mark.processes
def test_offset_query_by_timestamp_returns_first_offset_at_or_after_it(shared_broker):
    topic, messages = unique_topic("kcat-times"), offsets_for_times_messages("kcat")
    third = len(messages) // 3
    for chunk in (messages[:third], messages[third:2 * third], messages[2 * third:]):
        confluent.produce(shared_broker.bootstrap, topic, chunk)  # several batches per partition
    partitions = sorted({m.partition for m in messages})
    for timestamp in timestamp_probes(messages, 0):
        args = [arg for p in partitions for arg in ("-t", f"{topic}:{p}:{timestamp}")]
        output = kcat("-Q", "-b", shared_broker.bootstrap, *args).decode()
        found = {int(p): int(offset) for p, offset in re.findall(r"\[(\d+)\] offset (-?\d+)", output)}
        expected = {p: first_offset_at_or_after(messages, p, timestamp) for p in partitions}
        assert found == {p: -1 if o is None else o for p, o in expected.items()}, f"timestamp {timestamp}"


@pytest.mark.timeout(150)
def test_idempotent_producer_through_cutting_proxy_writes_each_line_once_in_order(tmp_path):
    topic, lines = unique_topic("kcat-idempotent"), kcat_lines(20_000, "kcat-idempotent-" + "y" * 60)
    with broker_behind_proxy(tmp_path / "data", cut_every_bytes=96 * 1024, max_cuts=12) as (broker, proxy):
        started = now_ms()
        kcat_produce(proxy.bootstrap, topic, lines, "-E", "-X", "enable.idempotence=true",
                     "-X", "retry.backoff.ms=20", "-X", "reconnect.backoff.ms=20",
                     "-X", "reconnect.backoff.max.ms=100")
        written = now_ms()
        proxy.stop_cutting()
        consumed = kcat_consume(proxy.bootstrap, topic)
        assert proxy.torn_requests > 0 and proxy.lost_responses > 0, (
            f"the proxy cut {proxy.cuts} times: {proxy.torn_requests} torn, {proxy.lost_responses} lost")
    assert_lines_once_in_order(lines, consumed, (started, written))


@pytest.mark.timeout(150)
def test_data_readable_after_clean_stop_and_after_sigkill_restart(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("kcat-restart")
    try:
        started = now_ms()
        lines = kcat_lines(6000, "restart")
        kcat_produce(broker.bootstrap, topic, lines[:3000], "-X", "acks=all")
        assert broker.stop() == 0, broker.log()
        broker.start()
        assert_lines_once_in_order(lines[:3000], kcat_consume(broker.bootstrap, topic), (started, now_ms()))

        kcat_produce(broker.bootstrap, topic, lines[3000:5000], "-X", "acks=all")
        broker.restart(clean=False)
        assert_lines_once_in_order(lines[:5000], kcat_consume(broker.bootstrap, topic), (started, now_ms()))

        kcat_produce(broker.bootstrap, topic, lines[5000:], "-X", "acks=all")
        assert_lines_once_in_order(lines, kcat_consume(broker.bootstrap, topic), (started, now_ms()))
    finally:
        broker.kill()


def test_relative_and_timestamp_start_offsets_read_the_right_tail(shared_broker):
    topic, messages = unique_topic("kcat-tail"), make_messages(400, "tail", partitions=2)
    confluent.produce(shared_broker.bootstrap, topic, messages)
    last_ten = kcat("-C", "-b", shared_broker.bootstrap, "-t", topic, "-p", "1", "-o", "-10", "-e", "-q", "-J")
    assert [json.loads(line)["offset"] for line in last_ten.splitlines()] == list(range(190, 200))

    since = messages[2 * 150 + 1].timestamp  # partition 1, offset 150
    tail = kcat("-C", "-b", shared_broker.bootstrap, "-t", topic, "-p", "1", "-o", f"s@{since}", "-e", "-q", "-J")
    assert [json.loads(line)["offset"] for line in tail.splitlines()] == list(range(150, 200))

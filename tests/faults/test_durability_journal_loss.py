"""Power loss, simulated: with flush.messages=1 an acknowledgement means
the batch is in the group-commit journal (fdatasynced), while the segment
file may hold it only in the page cache. After a SIGKILL the tests cut the
tail off each partition's segment file, as a power cut would leave it, keep
the journal, and restart: the broker appends the lost batches again from
the journal, and every acknowledged message is read back at its offset."""
from __future__ import annotations

import struct
import time
from pathlib import Path

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 2
MESSAGES = 3000


def produce(bootstrap: str, first: int, count: int) -> list[tuple[int, int, int]]:
    """Send ``count`` numbered messages, acks=all, idempotent; returns the
    acknowledgements (partition, offset, number)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                         "enable.idempotence": True, "linger.ms": 5,
                                         "batch.num.messages": 20})  # many batches to cut between
    acked: list[tuple[int, int, int]] = []

    def delivered(error, message):
        assert error is None, error
        acked.append((message.partition(), message.offset(), int(message.value())))

    for n in range(first, first + count):
        producer.produce("durable", str(n).encode(), partition=n % PARTITIONS, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def wait_for_journal(broker, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while "group commit journal" not in broker.log():
        assert time.monotonic() < deadline, broker.log()
        time.sleep(0.05)


def batch_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    starts, position = [], 0
    while position + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        if length <= 0:
            break
        starts.append(position)
        position += 12 + length
    return starts


def cut_tail(partition_dir: Path) -> int:
    """Cut the newest segment back to the first third of its batches;
    returns the first offset removed."""
    segment = max(partition_dir.glob("*.log"))
    starts = batch_starts(segment)
    assert len(starts) >= 6, f"too few batches in {segment} to cut"
    cut_at = starts[len(starts) // 3]
    with open(segment, "rb") as f:
        f.seek(cut_at)
        (first_removed,) = struct.unpack(">q", f.read(8))
    with open(segment, "r+b") as f:
        f.truncate(cut_at)
    return first_removed


def consume_all(bootstrap: str) -> dict[tuple[int, int], int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition("durable", p), timeout=10)[1]
            for p in range(PARTITIONS)}
    consumer.assign([confluent_kafka.TopicPartition("durable", p, 0) for p in range(PARTITIONS)])
    stored: dict[tuple[int, int], int] = {}
    deadline = time.monotonic() + 60
    while len(stored) < sum(ends.values()) and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                stored[(message.partition(), message.offset())] = int(message.value())
    consumer.close()
    return stored


def test_acknowledged_batches_lost_from_segment_files_come_back_from_the_journal(broker_factory):
    broker = broker_factory({"num.partitions": str(PARTITIONS), "log.flush.interval.messages": "1"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("durable", PARTITIONS, 1)])["durable"].result(10)
    acked = produce(broker.bootstrap, 0, 10)  # the first durable append creates the journal
    wait_for_journal(broker)
    acked += produce(broker.bootstrap, 10, MESSAGES)
    broker.kill()
    cut_from = {p: cut_tail(broker.data_dir / f"durable-{p}") for p in range(PARTITIONS)}
    lost = [a for a in acked if a[1] >= cut_from[a[0]]]
    assert len(lost) > MESSAGES // 2, "the cut must remove acknowledged messages"
    broker.start()
    stored = consume_all(broker.bootstrap)
    missing = [(p, offset, n) for p, offset, n in acked if stored.get((p, offset)) != n]
    assert missing == [], f"{len(missing)} acknowledged messages are missing or moved"
    assert "appended again" in broker.log()


def test_acknowledged_offset_commits_lost_from_segment_files_come_back_from_the_journal(broker_factory):
    """Offset commits on a flush.messages=1 broker go through the same
    group commit: acknowledged once journaled, put back after a power cut."""
    broker = broker_factory({"num.partitions": str(PARTITIONS), "log.flush.interval.messages": "1",
                             "offsets.topic.num.partitions": "1"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("durable", PARTITIONS, 1)])["durable"].result(10)
    produce(broker.bootstrap, 0, 10)
    wait_for_journal(broker)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer",
                                         "enable.auto.commit": False})
    commits = 30
    for offset in range(1, commits + 1):  # one batch per commit, each acknowledged
        done = consumer.commit(offsets=[confluent_kafka.TopicPartition("durable", 0, offset)],
                               asynchronous=False)
        assert done[0].error is None
    consumer.close()
    broker.kill()
    cut_tail(broker.data_dir / "__consumer_offsets-0")
    broker.start()
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer"})
    [committed] = consumer.committed([confluent_kafka.TopicPartition("durable", 0)], timeout=10)
    consumer.close()
    assert committed.offset == commits
    assert "appended again" in broker.log()

"""SIGKILL the broker again and again under acks=all idempotent load from a
real client (confluent-kafka), restart it on the same data dir, then read
everything back: every acknowledged message is there, at the offset it
was acknowledged with, in order, and nothing appears twice. Once with
flush.messages=1 (group commit over io_uring) and once with the default
page-cache writes (a process crash loses nothing the kernel already has)."""
from __future__ import annotations

import random
import threading
import time

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4
KILL_ROUNDS = 4
# Bounded load: bursts of 40 every 10 ms poll (~4k msg/s) while fewer than
# IN_QUEUE wait for their acks, so it pauses while the broker is down and
# lasts through every kill round; at most MAX_MESSAGES in all.
MAX_MESSAGES = 100_000
BURST = 40
IN_QUEUE = 2_000
MODES = {
    "fsync": {"log.flush.interval.messages": "1"},
    "page-cache": {},
}


class LoadThread(threading.Thread):
    """Produces "<n>" to partition n % PARTITIONS until stopped; records
    each acknowledgement (partition, offset, n) and each failure."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 2, "message.timeout.ms": 120_000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 300})
        self.acked: list[tuple[int, int, int]] = []
        self.failed: list[str] = []
        self.sent = 0
        self.stop = threading.Event()

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked.append((message.partition(), message.offset(), int(message.value())))
        else:
            self.failed.append(str(error))

    def run(self) -> None:
        while not self.stop.is_set() and self.sent < MAX_MESSAGES:
            for _ in range(BURST if len(self.producer) < IN_QUEUE else 0):
                try:
                    self.producer.produce("load", str(self.sent).encode(),
                                          partition=self.sent % PARTITIONS, on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.01)

    def finish(self) -> int:
        self.stop.set()
        self.join(10)
        return self.producer.flush(90)


def wait_for_acks(load: LoadThread, count: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(load.acked) < count:
        assert time.monotonic() < deadline, f"only {len(load.acked)} of {count} acknowledged"
        assert load.is_alive(), "the load ran out before the kill rounds did"
        time.sleep(0.02)


def consume_all(bootstrap: str) -> dict[int, list[tuple[int, int]]]:
    """(offset, n) of every stored message, per partition, up to the high watermark."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition("load", p), timeout=10)[1]
            for p in range(PARTITIONS)}
    consumer.assign([confluent_kafka.TopicPartition("load", p, 0) for p in range(PARTITIONS)])
    stored: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while any(len(stored[p]) < ends[p] for p in stored) and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                stored[message.partition()].append((message.offset(), int(message.value())))
    consumer.close()
    return stored


@pytest.mark.parametrize("mode", list(MODES))
def test_acknowledged_messages_survive_repeated_sigkill_in_order_without_duplicates(broker_factory, mode):
    broker = broker_factory({"num.partitions": str(PARTITIONS), **MODES[mode]})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("load", PARTITIONS, 1)])["load"].result(10)
    load = LoadThread(broker.bootstrap)
    load.start()
    rng = random.Random(5)
    acked_at_kill = [0]
    for _ in range(KILL_ROUNDS):
        wait_for_acks(load, acked_at_kill[-1] + 500)
        time.sleep(rng.uniform(0.1, 0.5))  # kill at a random point of the load
        acked_at_kill.append(len(load.acked))
        broker.restart(clean=False)
    wait_for_acks(load, acked_at_kill[-1] + 500)
    assert load.finish() == 0, "messages still undelivered after the last restart"
    assert load.failed == []
    stored = consume_all(broker.bootstrap)
    values = [n for partition in stored.values() for _, n in partition]
    assert len(values) == len(set(values)), "a message is stored twice"
    for partition, messages in stored.items():
        assert [offset for offset, _ in messages] == list(range(len(messages)))
        numbers = [n for _, n in messages]
        assert numbers == sorted(numbers), f"partition {partition} is out of order"
    by_offset = {(p, offset): n for p, messages in stored.items() for offset, n in messages}
    assert len(load.acked) == load.sent
    lost = [(p, offset, n) for p, offset, n in load.acked if by_offset.get((p, offset)) != n]
    assert lost == [], f"{len(lost)} acknowledged messages are missing or moved"
    if mode == "fsync":
        assert "group commit over io_uring" in broker.log()

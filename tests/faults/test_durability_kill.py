"""Crash the broker again and again under acks=all idempotent load from a
real client (confluent-kafka), restart it on the same data dir, then read
everything back: every acknowledged message is there, at the offset it
was acknowledged with, in order, and nothing appears twice.

With flush.messages=1 (group commit over io_uring) each crash is a power
cut: the data dir is on a disk whose unsynced writes are lost with the
broker (tests/support/power.py), so a message acknowledged before its
fsync would be missing; a SIGKILL alone could not tell, as the page cache
outlives the process. With the default page-cache writes each crash is a
SIGKILL, which loses nothing the kernel already has (a power cut would
lose the last seconds there, as it does in Kafka)."""
from __future__ import annotations

import random
import threading
import time

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.power import PowerCutDisk

PARTITIONS = 4
KILL_ROUNDS = 4
# Bounded load: bursts of 40 every 10 ms poll (~4k msg/s) while fewer than
# IN_QUEUE wait for their acks, so it pauses while the broker is down and
# lasts through every kill round; at most MAX_MESSAGES in all.
MAX_MESSAGES = 100_000
BURST = 40
IN_QUEUE = 2_000
MODES = {
    "fsync": {"log.flush.interval.messages": "1"},  # crash: a power cut
    "page-cache": {},                                # crash: SIGKILL
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
        try:
            while not self.stop.is_set() and self.sent < MAX_MESSAGES:
                for _ in range(BURST if len(self.producer) < IN_QUEUE else 0):
                    try:
                        self.producer.produce("load", str(self.sent).encode(),
                                              partition=self.sent % PARTITIONS, on_delivery=self._delivered)
                    except BufferError:
                        break
                    self.sent += 1
                self.producer.poll(0.01)
        except confluent_kafka.KafkaException as exc:  # a fatal error ends the producer
            self.failed.append(f"producer stopped: {exc}")

    def finish(self) -> int:
        self.stop.set()
        self.join(10)
        return self.producer.flush(90)


def wait_for_acks(load: LoadThread, count: int, timeout_s: float = 20.0) -> bool:
    """Until ``count`` messages are acknowledged; False when the producer
    stopped first (a fatal error: the check of what was stored says why)."""
    deadline = time.monotonic() + timeout_s
    while len(load.acked) < count:
        assert time.monotonic() < deadline, f"only {len(load.acked)} of {count} acknowledged: {load.failed[:3]}"
        if load.failed and not load.is_alive():
            return False
        assert load.is_alive(), "the load ran out before the kill rounds did"
        time.sleep(0.02)
    return True


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


@pytest.fixture
def power_disk(tmp_path):
    with PowerCutDisk(tmp_path / "power") as disk:
        yield disk


@pytest.mark.parametrize("mode", list(MODES))
def test_acknowledged_messages_survive_repeated_crashes_in_order_without_duplicates(request, broker_factory,
                                                                                   mode):
    settings = {"num.partitions": str(PARTITIONS), **MODES[mode]}
    disk: PowerCutDisk | None = None
    if mode == "fsync":
        disk = request.getfixturevalue("power_disk")
        settings["log.dirs"] = str(disk.mount_point / "data")  # the broker's own log stays off it
    broker = broker_factory(settings)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("load", PARTITIONS, 1)])["load"].result(10)
    load = LoadThread(broker.bootstrap)
    load.start()
    rng = random.Random(5)
    acked_at_kill = [0]
    for _ in range(KILL_ROUNDS):
        if not wait_for_acks(load, acked_at_kill[-1] + 500):
            break
        time.sleep(rng.uniform(0.1, 0.5))  # kill at a random point of the load
        acked_at_kill.append(len(load.acked))
        if disk is None:
            broker.restart(clean=False)
        else:
            disk.cut()
            broker.kill()
            disk.remount()
            broker.start()
    wait_for_acks(load, acked_at_kill[-1] + 500)
    undelivered = load.finish()
    stored = consume_all(broker.bootstrap)
    values = [n for partition in stored.values() for _, n in partition]
    assert len(values) == len(set(values)), "a message is stored twice"
    for partition, messages in stored.items():
        assert [offset for offset, _ in messages] == list(range(len(messages)))
        numbers = [n for _, n in messages]
        assert numbers == sorted(numbers), f"partition {partition} is out of order"
    by_offset = {(p, offset): n for p, messages in stored.items() for offset, n in messages}
    lost = [(p, offset, n) for p, offset, n in load.acked if by_offset.get((p, offset)) != n]
    assert lost == [], f"{len(lost)} acknowledged messages are missing or moved, e.g. {lost[:3]}; " \
                       f"the producer saw {load.failed[:1]}"
    assert load.failed == [] and undelivered == 0, "messages still undelivered after the last restart"
    assert len(load.acked) == load.sent
    if disk is not None:
        assert disk.cuts == KILL_ROUNDS and "group commit over io_uring" in broker.log()

"""A broker with 10,000 partitions and Kafka's defaults (1 GiB segments,
10 MiB segment.index.bytes, 4 KiB index interval, nothing flushed) is
SIGKILLed under load from a real client and started again: it listens
within a bound (generous: a regression guard, bench/bench_partitions.py
measures), every acknowledged message is readable at its offset, and the
indexes answer offset and timestamp lookups inside partitions large
enough to have many index entries."""
from __future__ import annotations

import random
import threading
import time

import confluent_kafka
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPICS = 100
PER_TOPIC = 100  # 10,000 partitions
# Every 5th message goes to one of the HEAVY partitions with a 1 KiB value,
# so they hold hundreds of KiB (an index entry per 4 KiB); the others get
# a few small messages each.
HEAVY = [(f"many-{t:03d}", p) for t in range(2) for p in range(5)]
HEAVY_VALUE_BYTES = 1024
KILL_AFTER_ACKS = 30_000
IN_QUEUE = 5_000
# The start after the kill took ~3 s here (2 cores); CI machines are slower
# and busier. A regression (a scan of every index, an fsync per partition)
# costs minutes, far past this.
RESTART_BOUND_S = 30.0
T0 = 1_700_000_000_000


def where(n: int) -> tuple[str, int]:
    if n % 5 == 0:
        return HEAVY[(n // 5) % len(HEAVY)]
    index = n % (TOPICS * PER_TOPIC)
    return f"many-{index // PER_TOPIC:03d}", index % PER_TOPIC


def value_of(n: int) -> bytes:
    return str(n).encode().ljust(HEAVY_VALUE_BYTES if n % 5 == 0 else 20, b".")


class Load(threading.Thread):
    """Produces message n to where(n) at timestamp T0 + n until stopped;
    keeps each acknowledgement: (topic, partition) -> [(offset, n)]."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 20_000, "queue.buffering.max.messages": 100_000})
        self.acked: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.count = 0
        self.stop = threading.Event()

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked.setdefault((message.topic(), message.partition()), []).append(
                (message.offset(), int(message.value().rstrip(b"."))))
            self.count += 1

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            while len(self.producer) < IN_QUEUE:
                topic, partition = where(n)
                self.producer.produce(topic, value_of(n), partition=partition, timestamp=T0 + n,
                                      on_delivery=self._delivered)
                n += 1
            self.producer.poll(0.01)

    def finish(self) -> None:
        self.stop.set()
        self.join(10)
        self.producer.flush(1)  # what the dead broker never answered is not acknowledged
        self.producer.purge()
        self.producer.flush(0)


def test_sigkill_under_load_with_10000_partitions_keeps_every_acknowledged_message(broker_factory):
    broker = broker_factory({"num.partitions": "1"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(f"many-{t:03d}", PER_TOPIC, 1)
                                       for t in range(TOPICS)], request_timeout=120).values():
        future.result(180)
    load = Load(broker.bootstrap)
    load.start()
    deadline = time.monotonic() + 120
    while load.count < KILL_AFTER_ACKS:
        assert time.monotonic() < deadline, f"only {load.count} acknowledged"
        time.sleep(0.05)
    broker.kill()
    load.finish()
    started = time.monotonic()
    broker.start()
    assert time.monotonic() - started < RESTART_BOUND_S
    check_every_acknowledged_message(broker.bootstrap, load.acked)
    check_offset_lookups(broker.bootstrap, load.acked)
    check_timestamp_lookups(broker.bootstrap, load.acked)


def check_every_acknowledged_message(bootstrap: str, acked: dict) -> None:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                                         "enable.auto.commit": False,
                                         "fetch.message.max.bytes": 65536})
    want = {key: dict(entries) for key, entries in acked.items()}
    missing = {key: set(entries) for key, entries in want.items()}
    consumer.assign([TopicPartition(topic, partition, 0) for topic, partition in want])
    deadline = time.monotonic() + 120
    while any(missing.values()):
        assert time.monotonic() < deadline, f"{sum(map(len, missing.values()))} still unread"
        for message in consumer.consume(5000, 0.5):
            assert message.error() is None, message.error()
            key = (message.topic(), message.partition())
            expected = want[key].get(message.offset())
            if expected is not None:
                assert int(message.value().rstrip(b".")) == expected, (key, message.offset())
                missing[key].discard(message.offset())
    consumer.close()


def check_offset_lookups(bootstrap: str, acked: dict) -> None:
    """Fetching from offsets inside the heavy partitions: the broker finds
    the batch through the offset index (rebuilt past the recovery point)."""
    rng = random.Random(3)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "lookups",
                                         "enable.auto.commit": False})
    for _ in range(5):
        targets = {key: rng.choice(acked[key]) for key in HEAVY}
        consumer.assign([TopicPartition(topic, p, targets[(topic, p)][0]) for topic, p in HEAVY])
        first: dict = {}
        deadline = time.monotonic() + 30
        while len(first) < len(HEAVY):
            assert time.monotonic() < deadline, f"no answer from {set(HEAVY) - set(first)}"
            for message in consumer.consume(100, 0.5):
                assert message.error() is None, message.error()
                first.setdefault((message.topic(), message.partition()), message)
        for key, (offset, n) in targets.items():
            assert (first[key].offset(), int(first[key].value().rstrip(b"."))) == (offset, n)
    consumer.close()


def check_timestamp_lookups(bootstrap: str, acked: dict) -> None:
    """ListOffsets by timestamp: the first offset whose timestamp is at or
    after T0 + n is message n's (offsets and timestamps rise together)."""
    rng = random.Random(4)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    for _ in range(5):
        targets = {key: rng.choice(acked[key]) for key in HEAVY}
        found = consumer.offsets_for_times(
            [TopicPartition(topic, p, T0 + targets[(topic, p)][1]) for topic, p in HEAVY], 30)
        for answer in found:
            assert answer.error is None
            assert answer.offset == targets[(answer.topic, answer.partition)][0]
    consumer.close()

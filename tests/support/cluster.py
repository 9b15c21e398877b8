"""Cluster tests' load and audit: an acknowledged-writes producer, a
reader of every partition, and the check that every acknowledged message
survived. The cluster itself is kcore.testing.cluster's."""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kcore.metadata import topic_id_from_string
from kcore.testing.cluster import CLUSTER_SETTINGS, WAIT_S, Cluster

__all__ = ["CLUSTER_SETTINGS", "Cluster", "ProducerLoad", "check_acknowledged_survived", "consume_all",
           "wait_for_progress", "zookeeper_client", "zookeeper_topic_id"]


@contextmanager
def zookeeper_client(cluster: Cluster) -> Iterator[Any]:
    """A kazoo client of the cluster's chroot, closed on exit."""
    from kazoo.client import KazooClient
    client = KazooClient(hosts=cluster.connect, timeout=5)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def zookeeper_topic_id(cluster: Cluster, topic: str) -> uuid.UUID | None:
    """The id ``/brokers/topics/<topic>`` holds, or None."""
    with zookeeper_client(cluster) as client:
        value = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    return topic_id_from_string(value["topic_id"]) if "topic_id" in value else None


class ProducerLoad:
    """An idempotent acks=all confluent-kafka producer writing ``seq`` values
    "<partition>:<seq>" to each partition as fast as it is acknowledged,
    from its own thread, until stop(). Bounded: at most ``max_messages``
    and ``max_seconds``. ``acked[p]`` holds (offset, seq) of every
    acknowledged message; ``errors`` every delivery error. ``rate``: at
    most that many messages a second over all partitions (a load that must
    keep going for a while: unpaced, one partition reaches 2M messages in
    ~10 s on 2 cores)."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int,
                 max_messages: int = 2_000_000, max_seconds: float = 180.0,
                 settings: dict | None = None, first_seq: int = 0, rate: float | None = None):
        import threading

        from confluent_kafka import Producer
        self.topic = topic
        self.partitions = partitions
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        self.errors: list = []
        self.max_messages = max_messages
        self.max_seconds = max_seconds
        self.first_seq = first_seq
        self.rate = rate
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 2,
                                   "message.timeout.ms": 120_000,
                                   "queue.buffering.max.messages": 20_000,
                                   **(settings or {})})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ProducerLoad:
        self._thread.start()
        return self

    def acked_count(self) -> int:
        return sum(len(v) for v in self.acked.values())

    def _deliver(self, err, msg) -> None:
        if err is not None:
            self.errors.append(err)
            return
        partition, seq = msg.value().decode().split(":")
        self.acked[int(partition)].append((msg.offset(), int(seq)))

    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        started = time.monotonic()
        deadline = started + self.max_seconds
        sent = [self.first_seq] * self.partitions  # the next seq of each partition
        count = 0  # messages produced, over all partitions
        while not self._stop.is_set() and count < self.max_messages and time.monotonic() < deadline:
            if self.rate and count > (time.monotonic() - started) * self.rate:
                self._producer.poll(0.005)  # ahead of the rate: serve deliveries meanwhile
                continue
            for partition in range(self.partitions):
                try:
                    self._producer.produce(self.topic, value=f"{partition}:{sent[partition]}".encode(),
                                           partition=partition, on_delivery=self._deliver)
                except BufferError:  # the queue is full: let deliveries drain it
                    self._producer.poll(0.05)
                    break
                sent[partition] += 1
                count += 1
            self._producer.poll(0)
        self._producer.flush(120)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)

    def finish(self) -> ProducerLoad:
        """Wait until max_messages are sent and acknowledged (or max_seconds)."""
        self._thread.join(self.max_seconds + 150)
        return self


def consume_all(cluster: Cluster, topic: str, partitions: int,
                timeout: float = WAIT_S) -> dict[int, list[tuple[int, str]]]:
    """Every message of every partition, from the start to the high
    watermark each has now: partition -> [(offset, value)]."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"audit-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.max.bytes": 16 << 20})
    try:
        ends = {p: _high_watermark(consumer, TopicPartition(topic, p), timeout) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any((found[p][-1][0] + 1 if found[p] else 0) < ends[p] for p in found):
            if time.monotonic() > deadline:
                raise AssertionError(f"consumed {[len(v) for v in found.values()]} of "
                                     f"{ends} within {timeout:g}s")
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            found[message.partition()].append((message.offset(), message.value().decode()))
        return found
    finally:
        consumer.close()


# Answers a client meets while a leadership moves: its metadata named the
# old leader. librdkafka refreshes the metadata, but get_watermark_offsets
# does not ask again, as its fetches do.
_LEADER_MOVING = ("NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "_TIMED_OUT")


def _high_watermark(consumer, partition, timeout: float) -> int:
    """The partition's high watermark, asked again (within ``timeout``)
    while its leadership is moving."""
    from confluent_kafka import KafkaException
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(partition, timeout=10)[1]
        except KafkaException as exc:
            if exc.args[0].name() not in _LEADER_MOVING or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def check_acknowledged_survived(load: ProducerLoad, found: dict[int, list[tuple[int, str]]]) -> int:
    """Every acknowledged message is in the log at its offset; the log holds
    each partition's values in order and once (idempotence). Returns the
    number of acknowledged messages checked."""
    checked = 0
    for partition, entries in found.items():
        values = [int(value.split(":")[1]) for _, value in entries]
        bad = next((i for i in range(1, len(values)) if values[i] <= values[i - 1]), None)
        assert bad is None, (f"partition {partition}: seq {values[bad]} at offset "
                             f"{entries[bad][0]} after {values[bad - 1]}; around it: "
                             f"{entries[max(bad - 5, 0):bad + 5]}")
        at = dict((offset, int(value.split(":")[1])) for offset, value in entries)
        for offset, seq in load.acked[partition]:
            assert at.get(offset) == seq, (f"partition {partition}: acknowledged seq {seq} at "
                                          f"offset {offset}, log has {at.get(offset)}")
            checked += 1
    return checked


def wait_for_progress(cluster: Cluster, load: ProducerLoad, at_least: int, what: str) -> None:
    """Until ``at_least`` more messages of ``load`` are acknowledged (60 s).
    A load that ended (its max_messages or max_seconds) fails at once: it
    cannot progress, and that is the test's bound, not the brokers'."""
    target = load.acked_count() + at_least
    cluster.wait_for(lambda: load.acked_count() >= target or not load.running(), what, timeout=60)
    assert load.acked_count() >= target, (
        f"{what}: the load on {load.topic} ended (max_messages {load.max_messages}, "
        f"max_seconds {load.max_seconds:g}) with {load.acked_count()} acknowledged, short of {target}")

"""A topic deleted and created again under its name while a confluent-kafka
(librdkafka) producer keeps writing it (librdkafka's own test
0107_topic_recreate, on the producer side).

The old topic's leader epochs are first moved above 0 (``bump``: a broker
restart), so the new topic's epoch 0 is below what the producer holds;
only the new topic id (Metadata v10+) tells it the topic is another one.
What kcore controls is checked: the producer gets acknowledgements for
records it sends after the re-creation, a consumer started after the
re-creation reads every one of them and none of the records the old topic
acknowledged, and Metadata gives the topic a new id.

librdkafka 2.16's consumer that was reading the old topic keeps the old
leader epochs (the next epochs it sees are older, so it ignores them);
that is the client's behaviour and is not tested here.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

# 200 records/s keeps a round short (50 acknowledged "after" records in
# ~0.25 s once the producer has found the new topic) on a shared machine.
SEND_INTERVAL_S = 0.005
AFTER_COUNT = 50
WAIT_S = 20.0


@dataclass
class Acknowledged:
    """The values the producer had acknowledged, by phase, and its errors."""

    before: set[str] = field(default_factory=set)
    during: set[str] = field(default_factory=set)
    after: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


def topic_id(admin: AdminClient, topic: str) -> str:
    """The topic's id as Metadata v10+ answers it (DescribeTopics), asked
    again while the answer is retriable: a broker just restarted answers
    LEADER_NOT_AVAILABLE until the controller's UpdateMetadata reaches it,
    and librdkafka's DescribeTopics does not retry that itself (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)
        except KafkaException as exc:
            error = exc.args[0]
            retriable = error.retriable() or error.code() == KafkaError.LEADER_NOT_AVAILABLE
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _create(admin: AdminClient, topic: str, partitions: int, replication_factor: int) -> None:
    """Create, retrying while the old topic's deletion completes (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            admin.create_topics([NewTopic(topic, partitions, replication_factor)])[topic].result(30)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class _Producing:
    """One producer thread writing ``<phase>-<n>`` values until stopped."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.phase = "before"
        self.acknowledged = Acknowledged()
        self._bootstrap = bootstrap
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True)

    def __enter__(self) -> _Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)

    def _delivered(self, err, message) -> None:
        value = message.value().decode()
        if err is not None:
            self.acknowledged.errors.append(f"{value}: {err}")
        else:
            getattr(self.acknowledged, value.split("-")[0]).add(value)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self._bootstrap, "linger.ms": 0,
                             "topic.metadata.refresh.interval.ms": 1000})
        deadline = time.monotonic() + 120
        sequence = 0
        while not self._stop.is_set() and time.monotonic() < deadline:
            value = f"{self.phase}-{sequence}"
            sequence += 1
            try:
                producer.produce(self.topic, value.encode(), on_delivery=self._delivered)
            except (BufferError, KafkaException) as exc:
                self.acknowledged.errors.append(f"{value}: {exc}")
            producer.poll(SEND_INTERVAL_S)
        producer.flush(10)

    def wait_for(self, phase: str, count: int) -> bool:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if len(getattr(self.acknowledged, phase)) >= count:
                return True
            time.sleep(0.05)
        return False


def read_all(bootstrap: str, topic: str, expected: set[str]) -> set[str]:
    """Every value a new consumer group reads from the topic's start, until
    ``expected`` is all read or nothing new comes for a while (bounded)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: set[str] = set()
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline and not expected <= seen:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.add(message.value().decode())
    finally:
        consumer.close()
    return seen


def recreate_while_producing(bootstrap: str, topic: str, partitions: tuple[int, int],
                             replication_factor: int, bump: Callable[[], None]) -> None:
    """The scenario, with its assertions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, topic, partitions[0], replication_factor)
    bump()
    old_id = topic_id(admin, topic)
    with _Producing(bootstrap, topic) as producing:
        assert producing.wait_for("before", AFTER_COUNT), f"nothing acknowledged before: {producing.acknowledged}"
        producing.phase = "during"
        # Acknowledged before the deletion began: surely the old topic's
        # (a record in flight then may land in either topic).
        old_topics_records = set(producing.acknowledged.before)
        admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
        _create(admin, topic, partitions[1], replication_factor)
        producing.phase = "after"
        assert producing.wait_for("after", AFTER_COUNT), \
            f"nothing acknowledged by the re-created topic: {producing.acknowledged}"
    acknowledged = producing.acknowledged
    assert topic_id(admin, topic) != old_id
    read = read_all(bootstrap, topic, acknowledged.after)
    assert acknowledged.after <= read, f"{len(acknowledged.after - read)} acknowledged records not read"
    assert not read & old_topics_records, f"the old topic's records read: {sorted(read & old_topics_records)[:5]}"

"""Transactions with real clients: a confluent-kafka transactional producer,
and a reader that consumes a topic to its end under either isolation level.

Under read_committed the end is the last stable offset, and offsets are not
contiguous (markers, aborted records), so `read_to_end` reads until the
client reports end-of-partition for every partition rather than counting
offsets. Every wait is bounded.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

READ_TIMEOUT_S = 30.0
TXN_TIMEOUT_S = 30.0
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    value: bytes


def txn_producer(bootstrap: str, transactional_id: str | None = None, **config) -> Producer:
    """A confluent-kafka producer with ``transactional_id`` (a fresh one when
    None), its transactions initialised."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "transactional.id": transactional_id or f"txn-{uuid.uuid4().hex[:10]}",
                         **config})
    producer.init_transactions(TXN_TIMEOUT_S)
    return producer


def produce_in_transaction(producer: Producer, topic: str, values: list[bytes], partition: int = 0,
                           commit: bool = True) -> None:
    """One whole transaction: begin, produce (flushed, so the records are in
    the log before the end), commit or abort."""
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(TXN_TIMEOUT_S) == 0
    if commit:
        producer.commit_transaction(TXN_TIMEOUT_S)
    else:
        producer.abort_transaction(TXN_TIMEOUT_S)


def reader(bootstrap: str, isolation: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-reader-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "isolation.level": isolation,
                     "enable.partition.eof": True, "fetch.wait.max.ms": 50, **config})


def read_to_end(bootstrap: str, topic: str, partitions: int | list[int] = 1, isolation: str = READ_COMMITTED,
                timeout: float = READ_TIMEOUT_S) -> list[Read]:
    """Every record a fresh consumer with ``isolation`` returns from the
    start of each partition until its end (the LSO under read_committed)."""
    indexes = list(range(partitions)) if isinstance(partitions, int) else partitions
    consumer = reader(bootstrap, isolation)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in indexes])
        return read_until_eof(consumer, set(indexes), timeout)
    finally:
        consumer.close()


def read_until_eof(consumer: Consumer, partitions: set[int], timeout: float = READ_TIMEOUT_S) -> list[Read]:
    """What ``consumer`` returns until each of ``partitions`` reported its end."""
    found: list[Read] = []
    waiting = set(partitions)
    deadline = time.monotonic() + timeout
    while waiting:
        assert time.monotonic() < deadline, f"no end of partitions {sorted(waiting)} in {timeout:g}s"
        for message in consumer.consume(1000, 0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    waiting.discard(message.partition())
                    continue
                raise KafkaException(error)
            waiting.add(message.partition())  # more came after an end: read to the next
            found.append(Read(message.partition(), message.offset(), message.value()))
    return found


def values(reads: list[Read]) -> list[bytes]:
    return [r.value for r in reads]


def labelled(label: str, count: int) -> list[bytes]:
    return [f"{label}-{i}".encode() for i in range(count)]

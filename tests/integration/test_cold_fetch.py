"""A consumer reading data the page cache no longer holds (a group far
behind): such slices are read by a worker thread instead of sent by
sendfile from the event loop (kcore/server/connection.py), and arrive
whole and in order, while a producer on the same broker is answered."""
from __future__ import annotations

import os

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing import free_port
from tests.support.metrics import scrape

TOPIC = "cold"
PARTITIONS = 2
MESSAGES = 4000  # 4 MB: several 1 MiB slices per partition


def drop_cached_pages(data_dir) -> int:
    """fsync then POSIX_FADV_DONTNEED every segment of the topic (no root
    needed: clean pages go); how many files."""
    dropped = 0
    for path in data_dir.glob(f"{TOPIC}-*/*.log"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += 1
        finally:
            os.close(fd)
    return dropped


def cold_fetch_bytes(url: str) -> float:
    return scrape(url)[("kcore_network_cold_fetch_bytes_total", ())]


def test_a_consumer_reads_dropped_pages_whole_while_a_producer_is_answered(broker_factory):
    http_port = free_port()
    broker = broker_factory({"http.listeners": f"http://127.0.0.1:{http_port}"})
    url = f"http://127.0.0.1:{http_port}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    values = [os.urandom(16) + bytes(1008) for _ in range(MESSAGES)]
    for i, value in enumerate(values):
        producer.produce(TOPIC, value, key=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    assert drop_cached_pages(broker.data_dir) == PARTITIONS
    assert cold_fetch_bytes(url) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cold",
                         "enable.auto.commit": False, "max.partition.fetch.bytes": 1_048_576})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    seen: dict[int, bytes] = {}
    produced_meanwhile = 0
    for _ in range(200):
        for message in consumer.consume(500, 1.0):
            assert message.error() is None, message.error()
            if message.key() is not None:  # not one of the produces made meanwhile
                seen[int(message.key())] = message.value()
        producer.produce(TOPIC, b"meanwhile", partition=0)
        produced_meanwhile += 1
        if len(seen) == MESSAGES:
            break
    consumer.close()
    assert producer.flush(30) == 0  # every produce sent during the cold reads acknowledged
    assert len(seen) == MESSAGES and all(seen[i] == values[i] for i in range(MESSAGES))
    assert produced_meanwhile > 0
    # A good part of the 4 MB was read from disk by the worker threads (about
    # half here, 0.8 MB once in a loaded CI run: locating each slice's
    # batches reads their headers on the event loop first, and the kernel
    # reads ahead of those reads). A broker without the cold path reads none.
    cold = cold_fetch_bytes(url)
    assert cold >= MESSAGES * 1024 / 8, cold

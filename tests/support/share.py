"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka
2.16): group configs, bounded consume loops, produced topics."""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kcore.client.client import KafkaClient
from kcore.client.errors import KafkaError
from kcore.client.share_groups import ShareGroupAdmin

# A consume loop that sees nothing new for this long is done; bounds every loop.
IDLE_S = 4.0
LOOP_LIMIT_S = 60.0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def set_group_configs(bootstraps: Iterable[str], group: str, configs: dict[str, str]) -> None:
    """Set a share group's configs on every broker named (kcore keeps
    group configs on the broker told)."""
    for bootstrap in bootstraps:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)


def create_topic(bootstrap: str, topic: str, partitions: int = 1, replication: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, count: int, partition: int = 0, prefix: str = "v",
            batch_records: int = 10_000) -> None:
    """``batch_records`` caps the records of one producer batch: a share
    fetch acquires whole batches (Kafka's batch-optimized mode), so records
    meant to be spread over several consumers go in several batches."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": batch_records})
    for index in range(count):
        producer.produce(topic, value=f"{prefix}{index}".encode(), partition=partition)
    assert producer.flush(30) == 0


def share_consumer(bootstrap: str, group: str, topic: str, **extra: str) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    consumer.subscribe([topic])
    return consumer


@dataclass
class Consumed:
    """What one consumer got: (partition, offset, delivery count) per record."""
    records: list[tuple[int, int, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def offsets(self) -> list[int]:
        return [offset for _partition, offset, _count in self.records]


def consume(consumer: ShareConsumer, until: int, out: Consumed, stop: threading.Event | None = None,
            idle_s: float = IDLE_S, limit_s: float = LOOP_LIMIT_S, close: bool = True) -> Consumed:
    """Poll (implicit acknowledgement: each poll accepts the previous one's
    records) until ``until`` records were seen by everyone (``stop``), or
    nothing came for ``idle_s``, or ``limit_s`` passed."""
    started = last = time.monotonic()
    while time.monotonic() - started < limit_s and time.monotonic() - last < idle_s:
        if stop is not None and stop.is_set():
            break
        for message in consumer.poll(0.5):
            if message.error():
                out.errors.append(str(message.error()))
                continue
            out.records.append((message.partition(), message.offset(), message.delivery_count()))
            last = time.monotonic()
        if len(out.records) >= until and stop is None:
            break
    if close:
        # Implicit mode accepts a poll's records on the next poll or a
        # commit; close() alone releases them (librdkafka 2.16).
        consumer.commit_sync()
        consumer.close()
    return out


def wait_for_members(bootstrap: str, group: str, count: int, timeout_s: float = 30.0) -> None:
    """Until ``count`` members of the share group each hold an assignment
    (ShareGroupDescribe), so records produced after are shared by them."""
    async def wait() -> None:
        async with KafkaClient(bootstrap) as client:
            admin = ShareGroupAdmin(client)
            deadline = time.monotonic() + timeout_s
            while await _assigned(admin, group) < count:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"share group {group}: fewer than {count} assigned members")
                await asyncio.sleep(0.2)

    asyncio.run(wait())


async def _assigned(admin: ShareGroupAdmin, group: str) -> int:
    try:
        described = await admin.describe(group)
    except KafkaError:  # not known to its coordinator yet
        return 0
    return sum(1 for member in described.members if member.assignment)


def consume_together(consumers: list[ShareConsumer], total: int,
                     started: Callable[[], None] | None = None,
                     idle_s: float = IDLE_S) -> list[Consumed]:
    """Each consumer in its own thread until the total is reached or all
    idle; ``started`` runs once the threads poll (records produced there
    reach consumers that have joined: give them an ``idle_s`` that covers
    the wait)."""
    results = [Consumed() for _ in consumers]
    stop = threading.Event()

    def run(consumer: ShareConsumer, out: Consumed) -> None:
        consume(consumer, total, out, stop, idle_s=idle_s)

    threads = [threading.Thread(target=run, args=(consumer, out), daemon=True)
               for consumer, out in zip(consumers, results)]
    for thread in threads:
        thread.start()
    if started is not None:
        started()
    deadline = time.monotonic() + LOOP_LIMIT_S
    while time.monotonic() < deadline and sum(len(r.records) for r in results) < total:
        if not any(thread.is_alive() for thread in threads):
            break
        time.sleep(0.1)
    # A little longer: a duplicate delivery would show up now.
    time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join(LOOP_LIMIT_S)
    return results

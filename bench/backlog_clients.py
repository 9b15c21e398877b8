"""The clients of bench/bench_backlog.py, one process each.

Run as ``python -m bench.backlog_clients`` by any interpreter with
confluent-kafka (the Kafka 0.9 peer needs an older one in its own
virtualenv), so this file imports only the standard library and
confluent_kafka. The first stdin line is a JSON spec: role, bootstrap,
topic, partitions, message_bytes, config (extra client settings), out (a
file for the result), and per role:

- ``fill``: ``count`` messages as fast as one producer can; result: MB/s
  and the failed deliveries.
- ``offsets``: the topic's end offsets; result: {partition: offset}.
- ``paced``: ``rate`` msg/s. Prints ``ready`` once it has the topic's
  metadata, sends from the ``go`` line on stdin until the ``stop`` line;
  result: each acknowledgement as (wall time, latency) in seconds, the
  failures and the count sent.
- ``catch-up``: a new group from the earliest offset until it holds every
  message below ``backlog`` ({partition: offset}); result: the wall times
  of its start, of its first message (once the group has formed) and of
  its end, the value bytes read, and whether anything was left.

Each role prints ``done`` when its result is in ``out``.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

ROUNDS_OF_PAYLOADS = 64
CATCH_UP_DEADLINE_S = 600


def payloads(message_bytes: int) -> list[bytes]:
    """Half-random values, as the other workloads use."""
    return [os.urandom(message_bytes // 2) + bytes(message_bytes - message_bytes // 2)
            for _ in range(ROUNDS_OF_PAYLOADS)]


def _producer_config(spec: dict, **extra) -> dict:
    return {"bootstrap.servers": spec["bootstrap"], "linger.ms": 5, "batch.size": 1_000_000,
            "acks": "1", "queue.buffering.max.messages": 1_000_000, **spec["config"], **extra}


def fill(spec: dict) -> dict:
    from confluent_kafka import Producer
    failures = [0]

    def delivered(error, _message):
        failures[0] += error is not None

    producer = Producer(_producer_config(spec, on_delivery=delivered,
                                         **{"queue.buffering.max.kbytes": 1_048_576}))
    topic, partitions, count = spec["topic"], spec["partitions"], spec["count"]
    values = payloads(spec["message_bytes"])
    producer.list_topics(topic, timeout=30)
    began = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, values[i & 63], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError("backlog not delivered")
    return {"mb_s": count * spec["message_bytes"] / (time.perf_counter() - began) / 1e6,
            "failures": failures[0]}


def offsets(spec: dict) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": "backlog-offsets",
                         **spec["config"]})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(spec["topic"], p), timeout=30)[1]
                for p in range(spec["partitions"])}
    finally:
        consumer.close()


def paced(spec: dict) -> dict:
    from confluent_kafka import Producer
    acks: list[tuple[float, float]] = []
    failures = [0]
    clock = time.time

    def delivered(error, message):
        if error is None:
            acks.append((clock(), message.latency()))
        else:
            failures[0] += 1

    producer = Producer(_producer_config(spec, on_delivery=delivered))
    topic, partitions, rate = spec["topic"], spec["partitions"], spec["rate"]
    values = payloads(spec["message_bytes"])
    producer.list_topics(topic, timeout=30)
    go, stop = threading.Event(), threading.Event()
    threading.Thread(target=_read_commands, args=(go, stop), daemon=True).start()
    print("ready", flush=True)
    go.wait()
    began, sent = time.perf_counter(), 0
    while not stop.is_set():
        ahead = began + sent / rate - time.perf_counter()
        if ahead > 0:
            producer.poll(min(ahead, 0.01))
            continue
        try:
            producer.produce(topic, values[sent & 63], partition=sent % partitions)
            sent += 1
        except BufferError:
            producer.poll(0.001)
        if sent % 64 == 0:
            producer.poll(0)
    producer.flush(60)
    return {"acks": acks, "failures": failures[0], "sent": sent}


def _read_commands(go: threading.Event, stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "go":
            go.set()
        elif line.strip() == "stop":
            break
    go.set()  # a closed stdin stops the producer too
    stop.set()


# tansu forms a new group after half the session timeout (23 s at the
# client's 45 s default); 10 s keeps that to 5 s, and lies within every
# broker's group.min.session.timeout.ms (6 s) and above the 3 s heartbeat.
CATCH_UP_SESSION_TIMEOUT_MS = 10_000


def catch_up(spec: dict) -> dict:
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": f"backlog-{os.getpid()}",
                         "session.timeout.ms": CATCH_UP_SESSION_TIMEOUT_MS,
                         "auto.offset.reset": "earliest", "enable.auto.commit": True,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 1_048_576,
                         **spec["config"]})
    consumer.subscribe([spec["topic"]])
    backlog = {int(p): offset for p, offset in spec["backlog"].items()}
    began, first = time.time(), None
    size, left = 0, dict(backlog)
    deadline = time.monotonic() + CATCH_UP_DEADLINE_S
    while left and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            if message.error() is not None:
                continue
            first = first or time.time()
            partition, offset = message.partition(), message.offset() or 0
            if partition in left and offset < backlog[partition]:
                size += len(message.value() or b"")
                if offset + 1 >= backlog[partition]:
                    del left[partition]
    ended = time.time()
    consumer.close()
    return {"began": began, "first": first or ended, "ended": ended, "bytes": size, "unfinished": bool(left),
            "nice": os.getpriority(os.PRIO_PROCESS, 0)}


ROLES = {"fill": fill, "offsets": offsets, "paced": paced, "catch-up": catch_up}


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    result = ROLES[spec["role"]](spec)
    with open(spec["out"], "w") as out:
        json.dump(result, out)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

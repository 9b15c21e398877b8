"""A confluent-kafka group member in its own process, for tests that kill,
add and upgrade members: it consumes, commits each message synchronously
after recording it, and writes what happened as JSON lines.

    python -m tests.support.group_worker BOOTSTRAP GROUP TOPIC OUT PROTOCOL [MAX_SECONDS]

PROTOCOL is `consumer` (KIP-848) or `classic`. Lines: {"event": "assign" |
"revoke", "partitions": [...], "t": monotonic seconds} on every rebalance
callback, {"event": "msg", "p": partition, "o": offset} per message (written
before its commit, so a message recorded by a member killed before the
commit is consumed again by the next owner, at that one offset). SIGTERM
closes the consumer (it leaves the group) and exits; it stops by itself
after MAX_SECONDS (default 180).
"""
from __future__ import annotations

import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException


def main(bootstrap: str, group: str, topic: str, out_path: str, protocol: str,
         max_seconds: float = 180.0) -> None:
    out = open(out_path, "a", buffering=1)
    stopping = False

    def write(record: dict) -> None:
        out.write(json.dumps(record) + "\n")

    def on_assign(consumer, partitions) -> None:
        write({"event": "assign", "partitions": sorted(p.partition for p in partitions),
               "t": time.monotonic()})

    def on_revoke(consumer, partitions) -> None:
        write({"event": "revoke", "partitions": sorted(p.partition for p in partitions),
               "t": time.monotonic()})

    def stop(*_args) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                       "partition.assignment.strategy": "cooperative-sticky"})
    consumer = Consumer(config)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    deadline = time.monotonic() + max_seconds
    while not stopping and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        write({"event": "msg", "p": message.partition(), "o": message.offset()})
        try:
            consumer.commit(message=message, asynchronous=False)
        except KafkaException as exc:
            write({"event": "commit_error", "p": message.partition(), "o": message.offset(),
                   "error": str(exc)})
    consumer.close()
    write({"event": "closed", "t": time.monotonic()})


if __name__ == "__main__":
    main(*sys.argv[1:6], *(float(a) for a in sys.argv[6:7]))

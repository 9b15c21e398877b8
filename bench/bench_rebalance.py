"""Rebalance time, classic vs consumer protocol (KIP-848): from a member
joining until every member consumes again.

A broker subprocess serves one topic of 100 partitions that a producer
thread keeps writing (every partition, ~2,000 messages/s). Nine
confluent-kafka members (one thread each, same process) form a group and
consume; then a tenth joins at T0. For each of the ten members, "consumes
again" is its first message after T0 and after its last assignment change
of this rebalance; the figure is the latest of those, minus T0, once the
ten members own the 100 partitions ten each. Beside it, the members'
pauses: each member's longest stretch without a message in that time,
added up over the ten (member-seconds of consumption the rebalance cost).

- classic: JoinGroup/SyncGroup with librdkafka's default eager assignors
  (range, roundrobin): every member gives up everything, rejoins and waits
  for the new assignment (Kafka's "stop the world").
- consumer: group.protocol=consumer, the broker's uniform assignor; only
  the members whose partitions move revoke anything.

Both heartbeat every 500 ms (heartbeat.interval.ms for classic,
group.consumer.heartbeat.interval.ms for consumer), the only setting that
decides how soon a member learns of the rebalance. Rounds alternate
(classic, consumer, classic, ...) on fresh groups of the same broker;
medians and their ratio are reported (Kafka reports up to 20x faster
rebalances with KIP-848). --work-ms gives each message a processing time,
as an application has: a classic member gives its partitions up only when
its poll loop comes back, and everyone waits for the slowest.

    .venv/bin/python -m bench.bench_rebalance [--rounds 3] [--members 10] [--partitions 100]

Under pytest-benchmark (`pytest bench/bench_rebalance.py --benchmark-enable`)
one round of each stores the same figures in extra_info.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.testing import BrokerProcess

HEARTBEAT_MS = 500
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
                   "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS)}
TOPIC = "rebalance"
# Bounds: every wait gives up (and the round fails) after this long.
WAIT_S = 120.0


class Member(threading.Thread):
    """One group member polling in its own thread; rebalance callbacks and
    messages are stamped with time.monotonic()."""

    def __init__(self, bootstrap: str, group: str, protocol: str, work_ms: int = 0):
        super().__init__(daemon=True)
        self.work_s = work_ms / 1000
        config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                  "auto.offset.reset": "latest", "enable.auto.commit": False}
        if protocol == "classic":
            config.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": HEARTBEAT_MS})
        self.consumer = Consumer(config)
        self.owned: set[int] = set()
        self.last_change = 0.0
        self.first_message_after: dict[float, float] = {}
        self.messages: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        self.consumer.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke)
        deadline = time.monotonic() + 10 * WAIT_S
        while not self.stopping.is_set() and time.monotonic() < deadline:
            message = self.consumer.poll(0.05)
            if message is not None and not message.error():
                self.messages.append(time.monotonic())
                if self.work_s:
                    time.sleep(self.work_s)    # the application's processing of the message
        self.consumer.close()

    def _assign(self, consumer, partitions) -> None:
        self.owned |= {p.partition for p in partitions}
        self.last_change = time.monotonic()

    def _revoke(self, consumer, partitions) -> None:
        self.owned -= {p.partition for p in partitions}
        self.last_change = time.monotonic()

    def longest_pause(self, since: float, until: float) -> float:
        """The longest stretch without a message between `since` and `until`."""
        times = [since, *(t for t in self.messages if since < t < until), until]
        return max(b - a for a, b in zip(times, times[1:]))

    def consumed_again(self, since: float) -> float | None:
        """When it first consumed after `since` and its last assignment change."""
        start = max(since, self.last_change)
        return next((t for t in self.messages if t > start), None)


def wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def balanced(members: list[Member], partitions: int) -> bool:
    owned = [m.owned for m in members]
    total = sum(len(o) for o in owned)
    return (total == partitions and len(set().union(*owned)) == partitions
            and max(len(o) for o in owned) - min(len(o) for o in owned) <= 1)


def one_round(bootstrap: str, protocol: str, group: str, members: int, partitions: int,
              work_ms: int = 0) -> tuple[float, float]:
    """(seconds from the last member's arrival until every member consumes
    again, the members' longest pauses in that time added up)."""
    group_members = [Member(bootstrap, group, protocol, work_ms) for _ in range(members - 1)]
    for member in group_members:
        member.start()
    try:
        wait_until(lambda: balanced(group_members, partitions), f"{members - 1} {protocol} members balanced")
        time.sleep(2 * HEARTBEAT_MS / 1000)     # settled: no rebalance still in flight
        newcomer = Member(bootstrap, group, protocol, work_ms)
        group_members.append(newcomer)
        joined_at = time.monotonic()
        newcomer.start()
        wait_until(lambda: balanced(group_members, partitions), f"{members} {protocol} members balanced")
        wait_until(lambda: all(m.consumed_again(joined_at) is not None for m in group_members),
                   "every member consuming again")
        done = max(m.consumed_again(joined_at) or 0.0 for m in group_members)
        return done - joined_at, sum(m.longest_pause(joined_at, done) for m in group_members)
    finally:
        for member in group_members:
            member.stopping.set()
        for member in group_members:
            member.join(30)


def keep_producing(bootstrap: str, partitions: int, stop: threading.Event) -> None:
    """~2,000 messages/s over every partition until `stop`."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    index = 0
    while not stop.is_set():
        for _ in range(100):
            producer.produce(TOPIC, b"x" * 64, partition=index % partitions)
            index += 1
        producer.poll(0)
        time.sleep(0.05)
    producer.flush(30)


def measure(rounds: int = 3, members: int = 10, partitions: int = 100, work_ms: int = 0) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kcore-bench-rebalance-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", BROKER_SETTINGS).start()
        stop = threading.Event()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(60)
            producer = threading.Thread(target=keep_producing, args=(broker.bootstrap_servers, partitions, stop))
            producer.start()
            times: dict[str, list[float]] = {"classic": [], "consumer": []}
            paused: dict[str, list[float]] = {"classic": [], "consumer": []}
            for index in range(rounds):
                for protocol in ("classic", "consumer"):
                    took, pauses = one_round(broker.bootstrap_servers, protocol, f"{protocol}-{index}",
                                             members, partitions, work_ms)
                    times[protocol].append(took)
                    paused[protocol].append(pauses)
            stop.set()
            producer.join(60)
        finally:
            stop.set()
            broker.kill()
    classic, consumer = statistics.median(times["classic"]), statistics.median(times["consumer"])
    classic_paused, consumer_paused = statistics.median(paused["classic"]), statistics.median(paused["consumer"])
    return {"classic_rebalance_s_p50": classic, "consumer_rebalance_s_p50": consumer,
            "classic_over_consumer": classic / consumer,
            "classic_rebalance_s_max": max(times["classic"]), "consumer_rebalance_s_max": max(times["consumer"]),
            "classic_member_s_paused_p50": classic_paused, "consumer_member_s_paused_p50": consumer_paused,
            "paused_classic_over_consumer": classic_paused / consumer_paused}


def test_rebalance_classic_vs_consumer_protocol(benchmark, report):
    figures = benchmark.pedantic(measure, args=(1, 10, 100), rounds=1, iterations=1)
    report("rebalance", **figures)
    # The figures are reported, not judged: one round on a shared machine
    # moves by a heartbeat interval either way (docs/consumer-groups.md).
    assert 0 < figures["consumer_rebalance_s_p50"] < 60 and 0 < figures["classic_rebalance_s_p50"] < 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--work-ms", type=int, default=0,
                        help="processing time per message, as an application's (0: none)")
    args = parser.parse_args()
    figures = measure(args.rounds, args.members, args.partitions, args.work_ms)
    for name, value in figures.items():
        print(f"{name:32s} {value:10.3f}")
    print(json.dumps({"bench": "rebalance", **{k: round(v, 3) for k, v in figures.items()}}))


if __name__ == "__main__":
    main()

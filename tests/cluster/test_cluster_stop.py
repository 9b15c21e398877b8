"""A whole cluster told to stop: SIGTERM to every broker at once, under
load. Each broker tries its controlled shutdown as Kafka does
(``controlled.shutdown.max.retries`` = 3 tries, 5 s apart, an attempt
failing at once when no controller is elected or reachable), then stops
anyway: every broker exits within 30 s, cleanly (``.kafka_cleanshutdown``
in its data dir, no stray task traceback in its log), and its next start
recovers nothing. Real brokers, a real ZooKeeper, confluent-kafka
producing; every wait and every load is bounded.
"""
from __future__ import annotations

import re
import signal
import time

from confluent_kafka.admin import NewTopic

from kcore.testing.broker import BrokerProcess
from tests.support.cluster import ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress

ROUNDS = 2
EXIT_BOUND_S = 30.0
# Kafka's controlled-shutdown defaults, not the 200 ms back-off the other
# cluster tests use: the bound must hold with what operators run.
KAFKA_SHUTDOWN_DEFAULTS = {"controlled.shutdown.max.retries": "3",
                           "controlled.shutdown.retry.backoff.ms": "5000"}
# What a broker's log must never show around a stop.
UNCLEAN_MARKS = ("Task exception was never retrieved", "Traceback", "pop from an empty deque")
# loader.py's line for each segment a start scans again (Kafka's
# "Recovering unflushed segment").
RECOVERY_MARK = "recovering segment"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def log_since(broker: BrokerProcess, offset: int) -> str:
    with open(broker.log_path, "rb") as log_file:
        log_file.seek(offset)
        return log_file.read().decode(errors="replace")


def log_size(broker: BrokerProcess) -> int:
    return broker.log_path.stat().st_size if broker.log_path.exists() else 0


def stop_all_at_once(brokers: dict[int, BrokerProcess]) -> dict[int, tuple[int | None, float]]:
    """SIGTERM to every broker in one go; (exit status or None if still
    running at the bound, seconds to exit) each. A broker past the bound
    is SIGKILLed, so the test ends either way."""
    started = time.monotonic()
    for broker in brokers.values():
        assert broker.process is not None
        broker.process.send_signal(signal.SIGTERM)
    exits: dict[int, tuple[int | None, float]] = {}
    for broker_id, broker in brokers.items():
        assert broker.process is not None
        left = max(0.0, started + EXIT_BOUND_S - time.monotonic())
        try:
            code: int | None = broker.process.wait(left)
        except Exception:  # subprocess.TimeoutExpired: still running at the bound
            code = None
            broker.kill()
        exits[broker_id] = (code, time.monotonic() - started)
    return exits


def one_partition(cluster, topic: str, order) -> tuple[int, int, int]:
    """(controller, first, second other broker) and ``topic``'s single
    partition fully replicated on the brokers in the order ``order`` gives
    them that triple."""
    controller = cluster.metadata().controller_id
    first, second = sorted(set(cluster.brokers) - {controller})
    created = NewTopic(topic, num_partitions=1, replica_assignment=[order(controller, first, second)])
    cluster.admin.create_topics([created])[topic].result(timeout=30)
    cluster.wait_for(lambda: cluster.fully_replicated(topic, 1, 3), f"{topic} fully replicated")
    return controller, first, second


def test_sigterm_to_every_broker_at_once_stops_each_cleanly_within_30_s(cluster_factory):
    cluster = cluster_factory(overrides=KAFKA_SHUTDOWN_DEFAULTS)
    cluster.create_topic("halt", 3, 3, {"min.insync.replicas": "2"})
    loads: list[ProducerLoad] = []
    for round_ in range(ROUNDS):
        # Short delivery timeouts: the producer gives up on what it could
        # not send once every broker is gone, instead of holding the test.
        load = ProducerLoad(cluster, "halt", 3, max_seconds=60, first_seq=round_ * 1_000_000,
                            settings={"message.timeout.ms": 5000}).start()
        loads.append(load)
        wait_for_progress(cluster, load, 300, f"round {round_}: the producer got going")
        offsets = {i: log_size(b) for i, b in cluster.brokers.items()}

        exits = stop_all_at_once(cluster.brokers)
        load.stop()
        print(f"round {round_}: exits after", {i: round(s, 1) for i, (_, s) in exits.items()})
        late = {i: seconds for i, (code, seconds) in exits.items() if code is None}
        assert late == {}, f"round {round_}: brokers still running after {EXIT_BOUND_S:g} s: {late}"
        assert {i: code for i, (code, _) in exits.items()} == {i: 0 for i in cluster.brokers}
        for broker_id, broker in cluster.brokers.items():
            assert (broker.data_dir / CLEAN_SHUTDOWN_FILE).exists(), f"broker {broker_id}"
            text = log_since(broker, offsets[broker_id])
            assert "stopped cleanly" in text
            found = [mark for mark in UNCLEAN_MARKS if mark in text]
            assert found == [], f"round {round_}, broker {broker_id}: {found}\n{text[-3000:]}"

        offsets = {i: log_size(b) for i, b in cluster.brokers.items()}
        cluster.start()
        cluster.wait_for(lambda: cluster.fully_replicated("halt", 3, 3),
                         f"round {round_}: every replica back in sync")
        for broker_id, broker in cluster.brokers.items():
            text = log_since(broker, offsets[broker_id])
            assert RECOVERY_MARK not in text, f"round {round_}, broker {broker_id}:\n{text}"
            assert not (broker.data_dir / CLEAN_SHUTDOWN_FILE).exists()  # taken at start

    found = consume_all(cluster, "halt", 3)
    assert sum(check_acknowledged_survived(load, found) for load in loads) \
        == sum(load.acked_count() for load in loads) > 0


def test_the_controller_stops_following_before_it_leaves_office(cluster_factory, monkeypatch):
    """Its own controlled shutdown ends with a StopReplica to itself for
    the partitions it follows, answered before it resigns (Kafka's
    controlled shutdown stops a leaving follower too). Sent after, the
    request died with the controller's channel: the broker kept fetching
    until it exited, a leader that saw it caught up proposed it back into
    the ISR, and with no controller left (the whole cluster stopping) the
    high watermark waited on it. The brokers log their requests at DEBUG."""
    monkeypatch.setenv("KCORE_TEST_BROKER_LOG_LEVEL", "DEBUG")
    cluster = cluster_factory()
    controller, _, _ = one_partition(cluster, "followed", lambda c, f, s: [f, c, s])
    broker = cluster.brokers[controller]
    offset = log_size(broker)
    assert broker.stop() == 0
    text = log_since(broker, offset)
    stop_replica = re.search(rf"StopReplica v\d+ from client 'kcore-controller-{controller}'", text)
    done = text.find("controlled shutdown done")
    assert stop_replica is not None and 0 <= stop_replica.start() < done, text[-3000:]


def test_the_controller_leaves_office_only_once_the_brokers_have_its_last_decisions(
        cluster_factory, monkeypatch):
    """Its own controlled shutdown moves its leaderships: the new leader's
    followers must hear of it from this controller, because with the whole
    cluster stopping no controller follows to tell them, and a follower
    still fetching from the old leader holds the new leader's high
    watermark. With one of them paused, the controller waits for its
    answer (bounded) before it leaves office; it used to close its
    channel, and the requests still queued there, at once."""
    monkeypatch.setenv("KCORE_TEST_BROKER_LOG_LEVEL", "DEBUG")
    cluster = cluster_factory()
    controller, _, second = one_partition(cluster, "moved", lambda c, f, s: [c, f, s])
    leaving, paused = cluster.brokers[controller], cluster.brokers[second]
    assert leaving.process is not None and paused.process is not None
    offsets = {controller: log_size(leaving), second: log_size(paused)}
    paused.process.send_signal(signal.SIGSTOP)
    try:
        leaving.process.send_signal(signal.SIGTERM)
        time.sleep(2)  # under the wait's 5 s bound, over the ~ms the shutdown takes otherwise
        assert "controlled shutdown done" not in log_since(leaving, offsets[controller])
        assert leaving.process.poll() is None
    finally:
        paused.process.send_signal(signal.SIGCONT)
    assert leaving.process.wait(EXIT_BOUND_S) == 0
    assert "controlled shutdown done" in log_since(leaving, offsets[controller])
    told = log_since(paused, offsets[second])
    assert re.search(rf"LeaderAndIsr v\d+ from client 'kcore-controller-{controller}'", told), told[-3000:]


def test_a_leaving_broker_does_not_follow_what_it_handed_over(cluster_factory):
    """Its controlled shutdown hands its leaderships over and makes it a
    follower of the new leaders. It must not fetch as one: caught up, it
    would be proposed back into the ISR, and a pending ISR change holds the
    high watermark until a controller answers it (none is left when the
    whole cluster stops). Here a controller is left, and it refuses the
    proposal (a broker shutting down is not eligible), which the new
    leader logs."""
    cluster = cluster_factory()
    controller, leaving, first = one_partition(cluster, "handed", lambda c, f, s: [f, s, c])
    offsets = {i: log_size(b) for i, b in cluster.brokers.items()}
    assert cluster.brokers[leaving].stop() == 0
    cluster.wait_for(lambda: cluster.metadata().topics["handed"].partitions[0].leader == first,
                     "the leadership handed to the next replica")
    time.sleep(2)  # a proposal and its refusal take milliseconds
    for broker_id in (first, controller):
        text = log_since(cluster.brokers[broker_id], offsets[broker_id])
        assert "handed-0: ISR change refused" not in text, text[-3000:]
    assert re.search(r"leaving: not fetching \d+ partitions",
                     log_since(cluster.brokers[leaving], offsets[leaving]))

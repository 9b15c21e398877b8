"""Losing brokers under load: SIGKILLed leaders (the controller among
them), a follower away while data flows, a leader cut off by SIGSTOP past
its ZooKeeper session. Whatever was acknowledged with acks=all survives,
in order and once; no replica keeps a divergent tail. Real brokers, a real
ZooKeeper, confluent-kafka as the client."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition

from kcore import protocol
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from kcore.protocol.records import Record, build_batch
from tests.support.cli import kcore_cli
from tests.support.cluster import ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress
from tests.support.wire import WireClient, produce_body

TOPIC_CONFIGS = {"min.insync.replicas": "2"}


class HighWatermarkWatch:
    """Samples each partition's high watermark as a consumer sees it
    (ListOffsets latest) from its own thread; a sample lower than an
    earlier one is recorded as a regression."""

    def __init__(self, cluster, topic: str, partitions: int):
        self._consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "hw-watch"})
        self._topic, self._partitions = topic, partitions
        self.highest = {p: -1 for p in range(partitions)}
        self.regressions: list[tuple[int, int, int]] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()

    def _run(self) -> None:
        deadline = time.monotonic() + 300
        while not self._stop.is_set() and time.monotonic() < deadline:
            for partition in range(self._partitions):
                try:
                    _, high = self._consumer.get_watermark_offsets(
                        TopicPartition(self._topic, partition), timeout=2, cached=False)
                except Exception:  # leader moving: retriable errors
                    continue
                self.samples += 1
                if high < self.highest[partition]:
                    self.regressions.append((partition, self.highest[partition], high))
                self.highest[partition] = max(self.highest[partition], high)
            time.sleep(0.02)



def test_acknowledged_writes_survive_leader_kills_including_the_controller(cluster):
    cluster.create_topic("events", 3, 3, TOPIC_CONFIGS)
    load = ProducerLoad(cluster, "events", 3, rate=20_000).start()
    with HighWatermarkWatch(cluster, "events", 3) as watch:
        try:
            wait_for_progress(cluster, load, 2000, "the producer got going")
            victims = [cluster.wait_leader("events", p) for p in range(3)]
            victims.append(cluster.metadata().controller_id)
            for victim in victims:
                broker = cluster.brokers[victim]
                broker.kill()
                cluster.wait_for(lambda victim=victim: all(cluster.leader("events", p) not in (-1, victim)
                                             for p in range(3)), f"leaders moved off {victim}")
                wait_for_progress(cluster, load, 1000, f"acks flow without broker {victim}")
                broker.start()
                cluster.wait_for(lambda: cluster.fully_replicated("events", 3, 3),
                                 f"broker {victim} back in every ISR")
            wait_for_progress(cluster, load, 1000, "acks flow after the last restart")
        finally:
            load.stop()
    assert load.errors == []
    found = consume_all(cluster, "events", 3)
    assert check_acknowledged_survived(load, found) == load.acked_count() > 5000
    for partition, entries in found.items():
        values = [int(value.split(":")[1]) for _, value in entries]
        assert values == list(range(len(values))), f"partition {partition} lost or repeated"
    assert watch.samples > 0 and watch.regressions == []


def test_a_follower_away_truncates_catches_up_and_rejoins(cluster):
    cluster.create_topic("away", 1, 3, TOPIC_CONFIGS)
    leader = cluster.wait_leader("away", 0)
    follower_id = next(b for b in cluster.brokers if b != leader)
    follower = cluster.brokers[follower_id]
    load = ProducerLoad(cluster, "away", 1, rate=20_000).start()
    with HighWatermarkWatch(cluster, "away", 1) as watch:
        try:
            wait_for_progress(cluster, load, 500, "the producer got going")
            follower.kill()
            cluster.wait_for(lambda: follower_id not in cluster.partitions("away")[0].isrs,
                             f"broker {follower_id} left the ISR")
            wait_for_progress(cluster, load, 3000, "acks flow with two replicas")
            follower.start()
            cluster.wait_for(lambda: cluster.fully_replicated("away", 1, 3),
                             f"broker {follower_id} rejoined the ISR")
            wait_for_progress(cluster, load, 500, "acks flow with three replicas")
        finally:
            load.stop()
    assert load.errors == [] and watch.regressions == []
    found = consume_all(cluster, "away", 1)
    assert check_acknowledged_survived(load, found) == load.acked_count()
    # The returning follower's own log holds everything, once and in order.
    leader_values = [int(v.split(":")[1]) for _, v in found[0]]
    cluster.wait_for(lambda: dump_values(follower, "away", 0) == leader_values,
                     f"broker {follower_id}'s log equals the leader's")


def dump_values(broker, topic: str, partition: int) -> list[int]:
    """The seq values in a broker's own log of the partition, read from its
    segment files with `kcore dump-log`."""
    directory = broker.data_dir / f"{topic}-{partition}"
    values = []
    for segment in sorted(directory.glob("*.log")):
        result = kcore_cli("dump-log", str(segment), "--records")
        assert result.returncode == 0, result.stderr
        for line in result.stdout.splitlines():
            if "payload:" in line:
                values.append(line.split("payload:", 1)[1].strip())
    return [int(v.split(":")[1]) if ":" in v and v.split(":")[1].isdigit() else -1 for v in values]


def test_a_leader_cut_off_cannot_acknowledge_and_loses_its_divergent_tail(cluster):
    cluster.create_topic("cut", 1, 3, TOPIC_CONFIGS)
    load = ProducerLoad(cluster, "cut", 1, max_messages=300).start().finish()
    assert load.errors == [] and len(load.acked[0]) == 300
    old_leader_id = cluster.wait_leader("cut", 0)
    old_leader = cluster.brokers[old_leader_id]
    client = WireClient(old_leader.port, timeout=60)
    try:
        old_leader.pause()
        cluster.wait_for(lambda: cluster.leader("cut", 0) not in (-1, old_leader_id),
                         "a new leader replaced the paused one")
        more = ProducerLoad(cluster, "cut", 1, max_messages=200).start().finish()
        assert more.errors == [] and len(more.acked[0]) == 200
        # Queued in the paused broker's socket: it reads this first on waking.
        divergent = bytes(build_batch([Record(key=b"x", value=b"0:divergent")]))
        client.send_raw(protocol.encode_request(
            ApiKey.PRODUCE, 7, 1, "kcore-tests", produce_body("cut", 0, divergent, acks=-1)))
        old_leader.resume()
        frame = client.read_frame()
    finally:
        old_leader.resume()
        client.close()
    _, answer = protocol.decode_response(ApiKey.PRODUCE, 7, frame)
    code = answer.responses[0].partition_responses[0].error_code
    assert code in (E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT, E.NOT_ENOUGH_REPLICAS), code
    cluster.wait_for(lambda: cluster.fully_replicated("cut", 1, 3), "the old leader rejoined")
    found = consume_all(cluster, "cut", 1)
    assert "0:divergent" not in [value for _, value in found[0]]
    cluster.wait_for(lambda: -1 not in dump_values(old_leader, "cut", 0),
                     "the old leader's divergent batch was truncated")
    values = dump_values(old_leader, "cut", 0)
    assert values == [int(v.split(":")[1]) for _, v in found[0]][:len(values)]


def test_a_leader_restarted_within_its_session_timeout_loses_nothing(cluster):
    """A broker back before ZooKeeper noticed it was gone (same id, new
    registration) lost its in-memory state: its leaderships move and it
    rejoins as a follower, as after any failure."""
    cluster.create_topic("bounce", 2, 3, TOPIC_CONFIGS)
    load = ProducerLoad(cluster, "bounce", 2, rate=20_000).start()
    try:
        wait_for_progress(cluster, load, 1000, "the producer got going")
        victim = cluster.wait_leader("bounce", 0)
        cluster.brokers[victim].kill()
        cluster.brokers[victim].start()  # registers once the old session expires
        cluster.wait_for(lambda: cluster.fully_replicated("bounce", 2, 3), "the ISR is whole again")
        wait_for_progress(cluster, load, 1000, "acks flow after the bounce")
    finally:
        load.stop()
    assert load.errors == []
    found = consume_all(cluster, "bounce", 2)
    assert check_acknowledged_survived(load, found) == load.acked_count()

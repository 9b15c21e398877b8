"""confluent-kafka with group.protocol=consumer (KIP-848) against kcore: the
broker assigns, members converge by heartbeats, a killed member's
partitions go to the others within the session timeout with every message
consumed once per committed offset, and a joining member takes partitions
only from their owners, moving nothing else."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.compat import make_messages, start_broker, unique_topic, wait_until
from tests.support.confluent import produce
from tests.support.group_members import assert_each_offset_once_per_commit, start_member

PARTITIONS = 12
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
BROKER_SETTINGS = {"group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                   "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
                   "group.initial.rebalance.delay.ms": "0"}
CONVERGE_S = 60.0


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def test_api_versions_advertise_the_consumer_protocol_as_kafka_4(tmp_path):
    broker = start_broker(tmp_path / "data", BROKER_SETTINGS)
    try:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "probe",
                             "group.protocol": "consumer"})
        topic = unique_topic("probe")
        create_topic(broker.bootstrap, topic, 2)
        consumer.subscribe([topic])
        wait_until(lambda: (consumer.poll(0.2), len(consumer.assignment()) == 2)[1], CONVERGE_S,
                   "one member owning both partitions")
        consumer.close()
    finally:
        broker.kill()


def test_three_members_share_twelve_partitions_and_take_over_a_killed_ones(tmp_path):
    broker = start_broker(tmp_path / "data", BROKER_SETTINGS)
    members = []
    try:
        topic = unique_topic("kip848")
        create_topic(broker.bootstrap, topic)
        first = make_messages(240, "first", PARTITIONS)
        produce(broker.bootstrap, topic, first)
        members = [start_member(name, tmp_path, broker.bootstrap, "g848", topic) for name in "abc"]
        wait_until(lambda: sorted(len(m.assignment()) for m in members) == [4, 4, 4], CONVERGE_S,
                   "three members owning four partitions each")
        assert set().union(*(m.assignment() for m in members)) == set(range(PARTITIONS))
        wait_until(lambda: sum(len(m.consumed()) for m in members) >= 120, CONVERGE_S, "half consumed")
        victim, survivors = members[0], members[1:]
        victim.kill()
        killed_at = time.monotonic()
        second = make_messages(240, "second", PARTITIONS)
        produce(broker.bootstrap, topic, second)
        wait_until(lambda: sorted(len(m.assignment()) for m in survivors) == [6, 6], CONVERGE_S,
                   "the survivors owning six partitions each")
        took = max(e["t"] for m in survivors for e in m.events() if e["event"] == "assign") - killed_at
        # The coordinator fences the victim after the session timeout; the
        # survivors' next heartbeat (or two) brings them its partitions.
        assert took < (SESSION_TIMEOUT_MS + 4 * HEARTBEAT_INTERVAL_MS) / 1000 + 3.0, took
        expected = {p: 40 for p in range(PARTITIONS)}
        wait_until(lambda: len({k for m in members for k in m.consumed()}) == 480, CONVERGE_S,
                   "every message consumed")
        for member in survivors:
            member.stop()
            assert not member.commit_errors()
        assert_each_offset_once_per_commit(members, victim, expected)
    finally:
        for member in members:
            member.stop()
        broker.kill()


def test_a_joining_member_moves_only_the_partitions_it_gets(tmp_path):
    broker = start_broker(tmp_path / "data", BROKER_SETTINGS)
    members = []
    try:
        topic = unique_topic("kip848join")
        create_topic(broker.bootstrap, topic)
        members = [start_member(name, tmp_path, broker.bootstrap, "gjoin", topic) for name in "abc"]
        wait_until(lambda: sorted(len(m.assignment()) for m in members) == [4, 4, 4], CONVERGE_S,
                   "three members owning four partitions each")
        before = {m.name: m.assignment() for m in members}
        events_before = {m.name: len(m.events()) for m in members}
        members.append(start_member("d", tmp_path, broker.bootstrap, "gjoin", topic))
        wait_until(lambda: sorted(len(m.assignment()) for m in members) == [3, 3, 3, 3], CONVERGE_S,
                   "four members owning three partitions each")
        newcomer = members[3].assignment()
        for member in members[:3]:
            after = member.assignment()
            assert after <= before[member.name], "an old member got a partition"
            new_events = member.events()[events_before[member.name]:]
            assigned = [e for e in new_events if e["event"] == "assign" and e["partitions"]]
            revoked = {p for e in new_events if e["event"] == "revoke" for p in e["partitions"]}
            assert not assigned and revoked == before[member.name] - after
            assert revoked <= newcomer
        assert len(newcomer) == 3
    finally:
        for member in members:
            member.stop()
        broker.kill()


def test_committed_offsets_are_read_back_by_a_consumer_protocol_member(tmp_path):
    broker = start_broker(tmp_path / "data", BROKER_SETTINGS)
    try:
        topic = unique_topic("kip848commit")
        create_topic(broker.bootstrap, topic, 2)
        produce(broker.bootstrap, topic, make_messages(20, "c", 2))
        config = {"bootstrap.servers": broker.bootstrap, "group.id": "gc", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}
        consumer = Consumer(config)
        consumer.subscribe([topic])
        got = 0
        deadline = time.monotonic() + CONVERGE_S
        while got < 20 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got += 1
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
        assert got == 20 and sum(tp.offset for tp in committed) == 20
        consumer.close()
    finally:
        broker.kill()


def test_rolling_upgrade_from_classic_to_consumer_under_load_loses_nothing(tmp_path):
    broker = start_broker(tmp_path / "data", {**BROKER_SETTINGS, "group.min.session.timeout.ms": "1000"})
    members = []
    producing = None
    try:
        topic = unique_topic("kip848upgrade")
        create_topic(broker.bootstrap, topic, 6)
        classic = [start_member(f"classic-{n}", tmp_path, broker.bootstrap, "gup", topic, "classic")
                   for n in "ab"]
        members += classic
        wait_until(lambda: sorted(len(m.assignment()) for m in classic) == [3, 3], CONVERGE_S,
                   "two classic members owning three partitions each")
        messages = make_messages(600, "up", 6)
        producing = threading.Thread(target=_produce_slowly, args=(broker.bootstrap, topic, messages))
        producing.start()
        for old in classic:
            old.stop()
            new = start_member(old.name.replace("classic", "consumer"), tmp_path, broker.bootstrap, "gup",
                               topic, "consumer")
            members.append(new)
            wait_until(lambda new=new: len(new.assignment()) > 0, CONVERGE_S, f"{new.name} owning partitions")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        described = admin.describe_consumer_groups(["gup"])["gup"].result(30)
        assert described.type.name == "CONSUMER" and len(described.members) == 2
        assert "classic group gup upgraded to a consumer group" in broker.log()
        producing.join(120)
        wait_until(lambda: len({k for m in members for k in m.consumed()}) == 600, CONVERGE_S,
                   "every message consumed across the upgrade")
        consumed = {k for m in members for k in m.consumed()}
        assert consumed == {(p, o) for p in range(6) for o in range(100)}
    finally:
        if producing is not None:
            producing.join(120)
        for member in members:
            member.stop()
        broker.kill()


def _produce_slowly(bootstrap: str, topic: str, messages) -> None:
    """The load during the upgrade: 600 messages in 60 batches over ~6 s."""
    for start in range(0, len(messages), 10):
        produce(bootstrap, topic, messages[start:start + 10])
        time.sleep(0.1)

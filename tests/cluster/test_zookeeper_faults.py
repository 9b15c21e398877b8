"""ZooKeeper faults that are not crashes: the controller's session expiring
under a pause (SIGSTOP past the 3 s session timeout) or a cut between it
and ZooKeeper alone (it keeps running and serving the other brokers), and
the whole ZooKeeper gone while the brokers keep serving. acks=all data survives
both; the old controller is fenced by the controller epoch; metadata
cannot change without ZooKeeper, and says so. Real brokers, a real
ZooKeeper, confluent-kafka clients; every wait and load is bounded.
"""
from __future__ import annotations

import asyncio
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from kcore.controller import zk_paths as paths
from kcore.controller.zk_state import ControllerEpoch, ControllerMovedError, StateWriter
from kcore.metadata import PartitionState
from kcore.metadata_store.zk_client import ZkClient
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.testing.broker import TEST_SETTINGS
from kcore.testing.cluster import SESSION_TIMEOUT_MS
from tests.support.cluster import Cluster, ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress
from tests.support.tcp_relay import TcpRelay
from tests.support.wire import WireClient

CONFIGS = {"min.insync.replicas": "2"}
SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000


def read_znode(cluster, path: str) -> tuple[bytes, object] | None:
    """(data, stat) of a znode under the cluster's chroot, None if absent."""
    client = KazooClient(hosts=cluster.connect, timeout=5)
    client.start(timeout=10)
    try:
        return client.get(path) if client.exists(path) else None
    finally:
        client.stop()
        client.close()


def controller_epoch(cluster) -> tuple[int, int]:
    """(epoch, znode version) of /controller_epoch."""
    found = read_znode(cluster, paths.CONTROLLER_EPOCH)
    assert found is not None
    data, stat = found
    return int(data.decode()), stat.version  # type: ignore[attr-defined]


def zookeeper_controller(cluster) -> int:
    """The controller as /controller names it (-1: none); a broker cut off
    from ZooKeeper still names itself in its Metadata answers."""
    found = read_znode(cluster, paths.CONTROLLER)
    return paths.decode_controller(found[0]) if found is not None and found[0] else -1


def broker_epoch(cluster, broker_id: int) -> int | None:
    """The czxid of the broker's registration: its broker epoch."""
    found = read_znode(cluster, paths.broker_path(broker_id))
    return found[1].czxid if found is not None else None  # type: ignore[attr-defined]


def stale_leader_and_isr(port: int, controller_id: int, epoch: int, topic: str,
                         replicas: list[int]) -> int:
    """A LeaderAndIsr as the controller of ``epoch`` would send it; the
    top-level error code of the answer."""
    body = {"controller_id": controller_id, "controller_epoch": epoch, "broker_epoch": -1,
            "live_leaders": [], "topic_states": [{"topic_name": topic, "partition_states": [{
                "partition_index": 0, "controller_epoch": epoch, "leader": controller_id,
                "leader_epoch": 10_000, "isr": [controller_id], "partition_epoch": 10_000,
                "replicas": replicas, "adding_replicas": [], "removing_replicas": [],
                "is_new": False}]}]}
    client = WireClient(port)
    try:
        return client.request(ApiKey.LEADER_AND_ISR, 4, body).error_code
    finally:
        client.close()


async def write_as_controller(cluster, epoch: ControllerEpoch, topic: str) -> list[PartitionState]:
    """Write partition 0's state znode as the controller of ``epoch``
    would: conditional on /controller_epoch's version."""
    zk = ZkClient(cluster.connect, session_timeout_s=5)
    await zk.start()
    try:
        data, stat = await zk.get(paths.partition_state_path(topic, 0))
        _, leader, leader_epoch, isr = paths.decode_partition_state(data)
        current = PartitionState(topic, 0, leader, leader_epoch, tuple(isr), (), stat.version,
                                 epoch.epoch)
        new = PartitionState(topic, 0, -1, leader_epoch + 1, tuple(isr), (), stat.version,
                             epoch.epoch)
        return await StateWriter(zk, epoch).update([(current, new)])
    finally:
        await zk.close()


def test_a_controller_paused_past_its_session_is_fenced_and_rejoins(cluster):
    cluster.create_topic("fenced", 3, 3, CONFIGS)
    load = ProducerLoad(cluster, "fenced", 3, max_seconds=120, rate=20_000).start()
    try:
        wait_for_progress(cluster, load, 1000, "the producer got going")
        old = cluster.metadata().controller_id
        old_epoch, old_version = controller_epoch(cluster)
        old_broker_epoch = broker_epoch(cluster, old)
        log_offset = cluster.brokers[old].log_path.stat().st_size
        cluster.brokers[old].pause()
        cluster.wait_for(lambda: cluster.metadata().controller_id not in (-1, old),
                         "another broker became controller")
        new = cluster.metadata().controller_id
        new_epoch, _ = controller_epoch(cluster)
        assert new_epoch > old_epoch
        cluster.wait_for(lambda: all(cluster.leader("fenced", p) not in (-1, old) for p in range(3)),
                         f"leaders moved off the paused {old}")
        wait_for_progress(cluster, load, 1000, "acks flow while the old controller is paused")

        # The old controller's epoch is over: brokers refuse what it would
        # send, and ZooKeeper what it would write.
        for broker_id, broker in cluster.brokers.items():
            if broker_id != old:
                assert stale_leader_and_isr(broker.port, old, old_epoch, "fenced",
                                            sorted(cluster.brokers)) \
                    == ErrorCode.STALE_CONTROLLER_EPOCH, f"broker {broker_id}"
        before = read_znode(cluster, paths.partition_state_path("fenced", 0))
        try:
            asyncio.run(write_as_controller(cluster, ControllerEpoch(old_epoch, old_version), "fenced"))
            raise AssertionError("a write under the old controller epoch was accepted")
        except ControllerMovedError:
            pass
        assert read_znode(cluster, paths.partition_state_path("fenced", 0)) == before

        cluster.brokers[old].resume()
        cluster.wait_for(lambda: broker_epoch(cluster, old) not in (None, old_broker_epoch),
                         f"{old} registered again under a new session")
        cluster.wait_for(lambda: cluster.fully_replicated("fenced", 3, 3),
                         f"{old} back in every ISR")
        wait_for_progress(cluster, load, 1000, "acks flow with the old controller back")
        assert cluster.metadata().controller_id == new
        assert controller_epoch(cluster)[0] == new_epoch  # it did not take office again
    finally:
        load.stop()
    text = cluster.brokers[old].log_path.read_text(errors="replace")[log_offset:]
    assert "ZooKeeper session expired" in text and "is no longer the controller" in text
    assert load.errors == []
    found = consume_all(cluster, "fenced", 3)
    assert check_acknowledged_survived(load, found) == load.acked_count() > 3000


def test_a_controller_cut_off_from_zookeeper_is_fenced_and_rejoins(tmp_path, zookeeper):
    """Only the controller's link to ZooKeeper is cut: it keeps running and
    serving, its session expires, another broker takes office and moves
    its leaderships, and nothing it decides meanwhile takes effect. Once
    the link heals it resigns, registers again and follows.

    As with Kafka in ZooKeeper mode, the cut-off broker cannot know it lost
    its leaderships: its Metadata still names it, and an acks=all write it
    takes cannot be committed (its followers left it and it cannot shrink
    its ISR), so a client that keeps asking it may stall on that partition
    until the link heals; nothing acknowledged is lost. Partitions it did
    not lead keep being written throughout."""
    relays = {i: TcpRelay(zookeeper.client_port).start() for i in (1, 2, 3)}
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3, TEST_SETTINGS)
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["zookeeper.connect"] = f"127.0.0.1:{relays[broker_id].port}/kcore"
    loads: list[ProducerLoad] = []
    try:
        cluster.start()
        old = zookeeper_controller(cluster)
        x, y = sorted(set(cluster.brokers) - {old})
        for name, replicas in (("zombie", [old, x, y]), ("away", [x, y, old])):
            cluster.admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[replicas],
                                                  config=CONFIGS)])[name].result(timeout=30)
            cluster.wait_for(lambda name=name: cluster.fully_replicated(name, 1, 3),
                             f"{name} fully replicated")
        zombie, away = (ProducerLoad(cluster, name, 1, max_seconds=150, rate=20_000).start()
                        for name in ("zombie", "away"))
        loads = [zombie, away]
        for load in loads:
            wait_for_progress(cluster, load, 500, f"{load.topic}: the producer got going")
        old_epoch, _ = controller_epoch(cluster)
        old_broker_epoch = broker_epoch(cluster, old)
        log_offset = cluster.brokers[old].log_path.stat().st_size
        relays[old].cut()
        cluster.wait_for(lambda: zookeeper_controller(cluster) not in (-1, old),
                         "another broker became controller")
        new = zookeeper_controller(cluster)
        assert controller_epoch(cluster)[0] > old_epoch
        cluster.wait_for(lambda: partition_state(cluster, "zombie")[1] == x,
                         f"the new controller moved zombie-0 to {x}")
        # Past the session timeout again: the cut-off broker, still running,
        # has had time to try its own ISR changes; none took effect.
        time.sleep(2 * SESSION_TIMEOUT_S)
        wait_for_progress(cluster, away, 1000, "acks flow where the cut-off broker did not lead")
        for name in ("zombie", "away"):
            _, leader, _, isr = partition_state(cluster, name)
            assert leader != old and old not in isr, (name, leader, isr)

        relays[old].heal()
        cluster.wait_for(lambda: broker_epoch(cluster, old) not in (None, old_broker_epoch),
                         f"{old} registered again under a new session")
        for name in ("zombie", "away"):
            cluster.wait_for(lambda name=name: cluster.fully_replicated(name, 1, 3),
                             f"{old} back in the ISR of {name}")
        for load in loads:
            wait_for_progress(cluster, load, 500, f"{load.topic}: acks flow after the cut healed")
        assert zookeeper_controller(cluster) == new
        for load in loads:
            load.stop()
        text = cluster.brokers[old].log_path.read_text(errors="replace")[log_offset:]
        assert "ZooKeeper session expired" in text and "is no longer the controller" in text
        assert away.errors == []
        for load in loads:
            found = consume_all(cluster, load.topic, 1)
            assert check_acknowledged_survived(load, found) == load.acked_count() > 500
    finally:
        for load in loads:
            load.stop()
        cluster.kill_all()
        for relay in relays.values():
            relay.close()


def partition_state(cluster, topic: str) -> tuple[int, int, int, list[int]]:
    """(controller epoch, leader, leader epoch, ISR) of partition 0 of
    ``topic``, as its state znode holds it."""
    found = read_znode(cluster, paths.partition_state_path(topic, 0))
    assert found is not None
    return paths.decode_partition_state(found[0])


class GroupReader:
    """A consumer group member reading a topic from its own thread until
    stopped (bounded at 240 s): the values it saw, the errors it got."""

    def __init__(self, cluster, topic: str):
        self.seen: set[str] = set()
        self.errors: list = []
        self._consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "steady-readers",
                                   "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                   "auto.commit.interval.ms": 200})
        self._consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 240
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                message = self._consumer.poll(0.2)
                if message is None:
                    continue
                if message.error() is not None:
                    self.errors.append(message.error())
                    continue
                self.seen.add(message.value().decode())
        finally:
            self._consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def refusal(future) -> KafkaError:
    """The error an admin request's future ends with; a success fails the test."""
    try:
        future.result(timeout=60)
    except KafkaException as raised:
        return raised.args[0]
    raise AssertionError("a metadata change succeeded without ZooKeeper")


def acknowledged_values(load: ProducerLoad) -> set[str]:
    return {f"{p}:{seq}" for p, acked in load.acked.items() for _, seq in acked}


def _created(cluster, name: str) -> bool:
    try:
        cluster.admin.create_topics([NewTopic(name, 1, 3, config=dict(CONFIGS))])[name].result(timeout=30)
    except KafkaException as exc:
        code = exc.args[0].code()
        if code == ErrorCode.TOPIC_ALREADY_EXISTS:  # a timed-out try went through after all
            return True
        if code == ErrorCode.REQUEST_TIMED_OUT:
            return False
        raise
    return True


def test_brokers_keep_serving_through_a_zookeeper_outage_and_resume_after_it(cluster, zookeeper):
    cluster.create_topic("steady", 3, 3, CONFIGS)
    before = {p: (s.leader, sorted(s.isrs)) for p, s in cluster.partitions("steady").items()}
    controller = cluster.metadata().controller_id
    load = ProducerLoad(cluster, "steady", 3, max_seconds=180, rate=20_000).start()
    reader = GroupReader(cluster, "steady")
    try:
        wait_for_progress(cluster, load, 1000, "the producer got going")
        cluster.wait_for(lambda: len(reader.seen) > 500, "the group reads")

        zookeeper.kill()
        outage_started = time.monotonic()
        read_before = len(reader.seen)
        # Past the session timeout twice over: nothing may depend on ZooKeeper.
        while time.monotonic() - outage_started < 2 * SESSION_TIMEOUT_S:
            wait_for_progress(cluster, load, 300, "acks flow while ZooKeeper is down")
        wait_for_progress(cluster, load, 1000, "acks still flow while ZooKeeper is down")
        cluster.wait_for(lambda: len(reader.seen) > read_before + 1000,
                         "the group reads while ZooKeeper is down")
        after = {p: (s.leader, sorted(s.isrs)) for p, s in cluster.partitions("steady").items()}
        assert after == before  # no ISR change, no leader change
        assert cluster.metadata().controller_id == controller

        # Metadata cannot change, and the answer says why: a topic, a
        # topic's config, a broker's dynamic config, a SCRAM credential.
        admin = cluster.admin
        created = admin.create_topics([NewTopic("during", 1, 3)], request_timeout=30)["during"]
        topic_config = ConfigResource(ResourceType.TOPIC, "steady", incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
        broker_config = ConfigResource(ResourceType.BROKER, str(controller), incremental_configs=[
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)])
        user = UserScramCredentialUpsertion(
            "ada", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"ada-secret")
        for future in (created, *admin.incremental_alter_configs([topic_config]).values(),
                       *admin.incremental_alter_configs([broker_config]).values(),
                       *admin.alter_user_scram_credentials([user]).values()):
            error = refusal(future)
            assert error.code() == ErrorCode.REQUEST_TIMED_OUT and "ZooKeeper" in error.str(), error

        zookeeper.start()
        cluster.wait_for(lambda: cluster.metadata().controller_id in cluster.brokers,
                         "a controller once ZooKeeper is back")
        # The controller named in metadata may be the one from before the
        # outage, its ZooKeeper session not back yet: a change made at once
        # can still time out (REQUEST_TIMED_OUT naming ZooKeeper), a retry not.
        cluster.wait_for(lambda: _created(cluster, "after"), "a topic created once ZooKeeper is back")
        cluster.wait_for(lambda: cluster.fully_replicated("after", 1, 3), "after has a full ISR")
        assert "during" not in cluster.metadata().topics
        described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "steady")])
        configs = next(iter(described.values())).result(timeout=30)
        assert configs["retention.ms"].is_default  # the refused change did not happen
        wait_for_progress(cluster, load, 1000, "acks flow after the outage")
        load.stop()
        cluster.wait_for(lambda: acknowledged_values(load) <= reader.seen,
                         "the group read every acknowledged message", timeout=60)
    finally:
        load.stop()
        reader.stop()
    assert load.errors == [] and [e for e in reader.errors if e.fatal()] == []
    found = consume_all(cluster, "steady", 3)
    assert check_acknowledged_survived(load, found) == load.acked_count() > 3000

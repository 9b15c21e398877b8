"""A three-broker cluster on a real ZooKeeper: placement, what clients see
in Metadata, who answers what, and the inter-broker requests' refusals of
stale or foreign input. Real broker processes, real clients."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from kcore.protocol.records import Record, build_batch
from tests.support import BrokerProcess
from tests.support.cli import kcore_cli
from tests.support.cluster import CLUSTER_SETTINGS
from tests.support.wire import WireClient, fetch_body, produce_body


def produce(cluster, topic: str, count: int, acks: str = "all") -> list:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks,
                         "enable.idempotence": acks == "all", "linger.ms": 5})
    errors = []
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(),
                         on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    return errors


def test_placement_metadata_and_leaders_answering(cluster):
    cluster.create_topic("orders", 4, 3)
    found = cluster.partitions("orders")
    # Replica j of partition i on broker (i + j) mod n of brokers [1, 2, 3].
    assert {p: (m.leader, list(m.replicas)) for p, m in found.items()} == {
        0: (1, [1, 2, 3]), 1: (2, [2, 3, 1]), 2: (3, [3, 1, 2]), 3: (1, [1, 2, 3])}
    assert all(sorted(m.isrs) == [1, 2, 3] for m in found.values())
    assert produce(cluster, "orders", 200) == [None] * 200
    # A broker that does not lead the partition says so; the leader appends.
    follower = cluster.brokers[2]
    client = WireClient(follower.port)
    try:
        batch = bytes(build_batch([Record(key=b"k", value=b"v")]))
        response = client.request(ApiKey.PRODUCE, 7, produce_body("orders", 0, batch, acks=-1))
        assert response.responses[0].partition_responses[0].error_code == E.NOT_LEADER_OR_FOLLOWER
        # Fetch v10 and older from a consumer goes to the leader only; from
        # v11 (KIP-392) any replica serves it, up to its high watermark.
        fetched = client.request(ApiKey.FETCH, 10, fetch_body("orders", 0, 0))
        assert fetched.responses[0].partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER
        cluster.wait_for(lambda: client.request(ApiKey.FETCH, 11, fetch_body("orders", 0, 0))
                         .responses[0].partitions[0].records, "the follower serves what it holds")
    finally:
        client.close()


def test_topic_describe_shows_leader_replicas_isr(cluster):
    cluster.create_topic("described", 2, 2)
    result = kcore_cli("topics", "describe", "described", "--bootstrap-server", cluster.brokers[1].bootstrap)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "Partition: " in line]
    assert "Leader: 1\tReplicas: 1,2\tIsr: 1,2" in lines[0]
    assert "Leader: 2\tReplicas: 2,3\tIsr: 2,3" in lines[1]


def test_replication_factor_above_the_live_brokers_is_refused(cluster):
    futures = cluster.admin.create_topics([NewTopic("too-many", 1, 4)])
    with pytest.raises(Exception) as failure:
        futures["too-many"].result(timeout=30)
    assert failure.value.args[0].code() == E.INVALID_REPLICATION_FACTOR


def test_rack_aware_placement(cluster_factory):
    cluster = cluster_factory(4, racks={1: "a", 2: "a", 3: "b", 4: "b"})
    cluster.create_topic("racked", 8, 2)
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    for partition in cluster.partitions("racked").values():
        assert {racks[r] for r in partition.replicas} == {"a", "b"}


def test_consumer_group_and_offsets_on_a_replicated_offsets_topic(cluster):
    cluster.create_topic("grouped", 3, 3)
    assert produce(cluster, "grouped", 300) == [None] * 300
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g1",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["grouped"])
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while seen < 300 and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert seen == 300
    offsets = cluster.partitions("__consumer_offsets")
    assert len(offsets) == 6 and all(len(p.replicas) == 3 and len(p.isrs) == 3
                                     for p in offsets.values())


def controller_request_error(port: int, api_key: int, version: int, body: dict):
    client = WireClient(port)
    try:
        return client.request(api_key, version, body)
    finally:
        client.close()


def test_stale_and_foreign_inter_broker_requests_change_nothing(cluster):
    cluster.create_topic("guarded", 1, 3)
    assert produce(cluster, "guarded", 10) == [None] * 10
    leader_id = cluster.wait_leader("guarded", 0)
    leader = cluster.brokers[leader_id]
    state = cluster.partitions("guarded")[0]
    # A replica fetch from a broker id outside the assignment: refused, no data.
    body = fetch_body("guarded", 0, 0)
    body["replica_id"] = 42
    response = controller_request_error(leader.port, ApiKey.FETCH, 11, body)
    part = response.responses[0].partitions[0]
    assert part.error_code == E.NOT_LEADER_OR_FOLLOWER and not part.records
    # A LeaderAndIsr from an old controller epoch: refused whole.
    stale = {"controller_id": 99, "controller_epoch": 0, "broker_epoch": -1, "live_leaders": [],
             "topic_states": [{"topic_name": "guarded", "partition_states": [{
                 "partition_index": 0, "controller_epoch": 0, "leader": 99, "leader_epoch": 1000,
                 "isr": [99], "partition_epoch": 1000, "replicas": [99, leader_id],
                 "adding_replicas": [], "removing_replicas": [], "is_new": False}]}]}
    answer = controller_request_error(leader.port, ApiKey.LEADER_AND_ISR, 4, stale)
    assert answer.error_code == E.STALE_CONTROLLER_EPOCH
    # The current controller epoch but an older leader epoch: refused per partition.
    epoch = int(cluster_zk_get(cluster, "/controller_epoch"))
    older = json.loads(json.dumps(stale))
    older["controller_epoch"] = epoch
    older["topic_states"][0]["partition_states"][0].update(leader_epoch=0, partition_epoch=0)
    answer = controller_request_error(leader.port, ApiKey.LEADER_AND_ISR, 4, older)
    assert [p.error_code for p in answer.partition_errors] == [E.STALE_CONTROLLER_EPOCH]
    # An AlterPartition with a stale leader epoch, sent to the controller.
    controller = cluster.brokers[cluster.metadata().controller_id]
    alter = {"broker_id": leader_id, "broker_epoch": broker_epoch(cluster, leader_id),
             "topics": [{"topic_name": "guarded", "partitions": [{
                 "partition_index": 0, "leader_epoch": -5, "new_isr": [leader_id],
                 "leader_recovery_state": 0, "partition_epoch": 0}]}]}
    answer = controller_request_error(controller.port, ApiKey.ALTER_PARTITION, 1, alter)
    assert answer.topics[0].partitions[0].error_code == E.FENCED_LEADER_EPOCH
    # An AlterPartition from a broker epoch that is not the live one.
    alter["broker_epoch"] = 1
    answer = controller_request_error(controller.port, ApiKey.ALTER_PARTITION, 1, alter)
    assert answer.error_code == E.STALE_BROKER_EPOCH
    # Nothing moved.
    after = cluster.partitions("guarded")[0]
    assert (after.leader, sorted(after.isrs)) == (state.leader, sorted(state.isrs))
    assert produce(cluster, "guarded", 10) == [None] * 10


def cluster_zk_get(cluster, path: str) -> str:
    from kazoo.client import KazooClient
    client = KazooClient(hosts=cluster.connect, timeout=5)
    client.start(timeout=10)
    try:
        return client.get(path)[0].decode()
    finally:
        client.stop()
        client.close()


def broker_epoch(cluster, broker_id: int) -> int:
    from kazoo.client import KazooClient
    client = KazooClient(hosts=cluster.connect, timeout=5)
    client.start(timeout=10)
    try:
        return client.get(f"/brokers/ids/{broker_id}")[1].czxid
    finally:
        client.stop()
        client.close()


def test_a_cluster_with_flush_messages_1_acknowledges_only_synced_copies(cluster_factory):
    """Group commit on every replica: acks=all completes (the followers fsync
    before their next fetch reports the offset) and everything is readable."""
    cluster = cluster_factory(3, {"log.flush.interval.messages": "1"})
    cluster.create_topic("synced", 2, 3, {"min.insync.replicas": "2"})
    assert produce(cluster, "synced", 500) == [None] * 500
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "synced-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["synced"])
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while seen < 500 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen += 1
    finally:
        consumer.close()
    assert seen == 500


def test_a_node_of_two_processes_joins_the_cluster_as_two_brokers(tmp_path, zookeeper):
    """With zookeeper.connect, each process of a num.processes node is a
    broker of the cluster: ids node+0 and node+1, rack node-<id>."""
    node = BrokerProcess(tmp_path / "node", {**CLUSTER_SETTINGS, "broker.id": "10",
                                             "num.processes": "2",
                                             "zookeeper.connect": zookeeper.connect_string + "/kcore"})
    node.start()
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        deadline = time.monotonic() + 30
        while len(admin.list_topics(timeout=5).brokers) < 2:
            assert time.monotonic() < deadline, node.log()
            time.sleep(0.1)
        admin.create_topics([NewTopic("spread", 2, 2)])["spread"].result(30)
        assert produce(node, "spread", 100) == [None] * 100
        replicas = {p.id: sorted(p.replicas) for p in
                    admin.list_topics("spread", timeout=5).topics["spread"].partitions.values()}
        assert replicas == {0: [10, 11], 1: [10, 11]}
    finally:
        node.kill()

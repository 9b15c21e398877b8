"""KIP-951 leader hints on a three-broker cluster: a Produce v10+ that
reaches a broker not leading its partition is answered
NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its
endpoint, also after the leadership moved, and also by topic id (v13);
v9 carries none. confluent-kafka (librdkafka 2.16, Produce v10+) fails
over on them."""
from __future__ import annotations

import json

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from kcore.protocol.records import Record, build_batch
from tests.support.cluster import zookeeper_client, zookeeper_topic_id
from tests.support.wire import WireClient


def produce_to(broker, topic_data: list[dict], version: int):
    client = WireClient(broker.port)
    try:
        return client.request(ApiKey.PRODUCE, version, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": topic_data})
    finally:
        client.close()


def leader_epoch(cluster, topic: str, partition: int) -> int:
    with zookeeper_client(cluster) as client:
        state = json.loads(client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])
    return state["leader_epoch"]


def one_batch(topic: str | None = None, topic_id=None) -> list[dict]:
    data = [{"index": 0, "records": bytes(build_batch([Record(key=None, value=b"v")]))}]
    return [{"name": topic, "partition_data": data} if topic_id is None
            else {"topic_id": topic_id, "partition_data": data}]


def test_a_follower_names_the_leader_and_its_endpoint(cluster):
    cluster.create_topic("hinted", 1, 3)
    leader = cluster.wait_leader("hinted", 0)
    follower = cluster.brokers[next(b for b in cluster.brokers if b != leader)]
    epoch = leader_epoch(cluster, "hinted", 0)
    # ZooKeeper names the leader before the follower has heard of the
    # topic; until then it answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does.
    cluster.wait_for(lambda: produce_to(follower, one_batch("hinted"), 10).responses[0]
                     .partition_responses[0].error_code != E.UNKNOWN_TOPIC_OR_PARTITION,
                     "the follower knows the topic")
    answer = produce_to(follower, one_batch("hinted"), 10)
    part = answer.responses[0].partition_responses[0]
    assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, epoch)
    assert [(n.node_id, n.host, n.port, n.rack) for n in answer.node_endpoints] == [
        (leader, "127.0.0.1", cluster.brokers[leader].port, None)]
    # v9 has no such fields: the client learns the leader from Metadata.
    plain = produce_to(follower, one_batch("hinted"), 9)
    assert plain.responses[0].partition_responses[0].error_code == E.NOT_LEADER_OR_FOLLOWER
    assert plain.node_endpoints == [] and plain.responses[0].partition_responses[0].current_leader.leader_id == -1
    # v13: by topic id; the hint is the same.
    by_id = produce_to(follower, one_batch(topic_id=zookeeper_topic_id(cluster, "hinted")), 13)
    assert by_id.responses[0].partition_responses[0].current_leader.leader_id == leader
    assert produce_to(cluster.brokers[leader], one_batch("hinted"), 10).responses[0] \
        .partition_responses[0].error_code == E.NONE


def test_the_old_leader_names_the_new_one_after_a_move(cluster):
    cluster.create_topic("moved", 1, 3)
    old = cluster.wait_leader("moved", 0)
    cluster.brokers[old].stop()  # controlled shutdown: the leadership moves first
    cluster.wait_for(lambda: cluster.leader("moved", 0) not in (-1, old), "a new leader")
    cluster.brokers[old].start()
    cluster.wait_for(lambda: cluster.fully_replicated("moved", 1, 3), "the old leader back in the ISR")
    new = cluster.wait_leader("moved", 0)
    answer = produce_to(cluster.brokers[old], one_batch("moved"), 12)
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.current_leader.leader_id) == (E.NOT_LEADER_OR_FOLLOWER, new)
    assert part.current_leader.leader_epoch == leader_epoch(cluster, "moved", 0)
    assert [n.node_id for n in answer.node_endpoints] == [new]

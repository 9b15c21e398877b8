"""Topic ids (KIP-516) on a three-broker ZooKeeper cluster: the id
ZooKeeper holds is the one every replica records on disk; a topic written
by a tool from before topic ids gets one from the controller; a broker
that was away while its topic was deleted and created again sets its old
logs (at start, or when the controller's first LeaderAndIsr names the
partition under the new id) instead of serving them as the new topic's. Real brokers, a
real ZooKeeper, confluent-kafka as the client."""
from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition

from kcore.log.checkpoints import PartitionMetadataFile
from tests.support.cluster import consume_all, zookeeper_client, zookeeper_topic_id


def recorded_ids(cluster, topic: str, partitions: int) -> dict[tuple[int, int], object]:
    """(broker id, partition) -> the topic id in that replica's partition.metadata."""
    found = {}
    for broker_id, broker in cluster.brokers.items():
        for partition in range(partitions):
            directory = broker.data_dir / f"{topic}-{partition}"
            if directory.is_dir():
                found[(broker_id, partition)] = PartitionMetadataFile(directory).read()
    return found


def create(cluster, topic: str, replicas: list[int]) -> None:
    futures = cluster.admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[replicas])])
    futures[topic].result(timeout=30)
    cluster.wait_for(lambda: cluster.fully_replicated(topic, 1, len(replicas)), f"{topic} is replicated")


def produce(cluster, topic: str, values: list[str], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def test_every_replica_records_the_id_zookeeper_holds_and_every_broker_answers(cluster):
    cluster.create_topic("ids", 2, 3)
    topic_id = zookeeper_topic_id(cluster, "ids")
    assert topic_id is not None
    cluster.wait_for(lambda: recorded_ids(cluster, "ids", 2) == {
        (b, p): topic_id for b in (1, 2, 3) for p in range(2)}, "each replica recorded the id")
    for broker in cluster.brokers.values():  # each from its own metadata cache
        with KafkaAdminClient(bootstrap_servers=broker.bootstrap) as admin:
            (by_id,) = admin.describe_topics([topic_id])
            assert (by_id["name"], by_id["topic_id"]) == ("ids", str(topic_id))
            page = admin.describe_topic_partitions(["ids"], response_partition_limit=1)
            assert [(p["partition_index"], p["leader_id"], sorted(p["isr_nodes"]))
                    for p in page["topics"][0]["partitions"]] == [(0, 1, [1, 2, 3])]
            assert page["next_cursor"] == {"topic_name": "ids", "partition_index": 1}


def test_a_topic_written_without_an_id_gets_one_from_the_controller(cluster):
    # What Kafka's AdminZkClient before 2.8 wrote: no topic_id.
    with zookeeper_client(cluster) as client:
        client.create("/brokers/topics/legacy", b'{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}')
    cluster.wait_for(lambda: cluster.fully_replicated("legacy", 2, 3), "legacy has leaders")
    topic_id = zookeeper_topic_id(cluster, "legacy")
    assert topic_id is not None
    cluster.wait_for(lambda: recorded_ids(cluster, "legacy", 2) == {
        (b, p): topic_id for b in (1, 2, 3) for p in range(2)}, "each replica recorded the given id")
    produce(cluster, "legacy", ["a", "b"], 2)
    cluster.brokers[cluster.metadata().controller_id].stop()  # the next controller keeps the id
    cluster.wait_for(lambda: cluster.metadata().controller_id in cluster.brokers
                     and cluster.brokers[cluster.metadata().controller_id].running, "a new controller")
    assert zookeeper_topic_id(cluster, "legacy") == topic_id


def test_a_broker_away_while_its_topic_was_recreated_drops_the_old_log_at_start(cluster):
    """The old replica's partition.metadata names the deleted topic's id:
    it goes when broker 3 starts, and broker 3 later holds only the new
    topic's records."""
    create(cluster, "phoenix", [1, 3])
    produce(cluster, "phoenix", [f"old-{i}" for i in range(30)], 1)
    away = cluster.brokers[3]
    away.stop()
    cluster.admin.delete_topics(["phoenix"])["phoenix"].result(30)
    cluster.wait_for(lambda: "phoenix" not in cluster.metadata().topics, "phoenix deleted")
    create(cluster, "phoenix", [1, 2])
    new_id = zookeeper_topic_id(cluster, "phoenix")
    produce(cluster, "phoenix", [f"new-{i}" for i in range(6)], 1)
    away.start()
    assert not (away.data_dir / "phoenix-0").exists()  # gone before the broker listened
    assert "deleting the log of phoenix-0: it belongs to topic id" in away.log()
    cluster.wait_for(lambda: len(cluster.metadata().brokers) == 3, "broker 3 registered")
    with KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000) as admin:
        moved = admin.alter_partition_reassignments({KafkaTopicPartition("phoenix", 0): [3, 1]})
    assert moved == {KafkaTopicPartition("phoenix", 0): None}
    cluster.wait_for(lambda: sorted(cluster.partitions("phoenix")[0].replicas) == [1, 3]
                     and cluster.fully_replicated("phoenix", 1, 2), "phoenix-0 moved to [3, 1]")
    cluster.brokers[1].stop()  # broker 3 leads: what it serves is what it holds
    cluster.wait_for(lambda: cluster.leader("phoenix", 0) == 3, "broker 3 leads phoenix-0")
    assert [value for _, value in consume_all(cluster, "phoenix", 1)[0]] == [f"new-{i}" for i in range(6)]
    assert recorded_ids(cluster, "phoenix", 1)[(3, 0)] == new_id

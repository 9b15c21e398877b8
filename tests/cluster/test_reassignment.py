"""Partition reassignment (KIP-455) on a real cluster: three kcore brokers,
a real ZooKeeper, kafka-python's KafkaAdminClient (AlterPartitionReassignments
/ ListPartitionReassignments), confluent-kafka producing and consuming, and
the `kcore reassign-partitions` command line.

Every wait is bounded (Cluster.wait_for, 30 s unless said); every load is
bounded in messages and seconds.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.cli import kcore_cli
from tests.support.cluster import ProducerLoad, check_acknowledged_survived, consume_all, wait_for_progress
from tests.support.wire import WireClient


@pytest.fixture
def admin_factory():
    made: list[KafkaAdminClient] = []

    def make(cluster) -> KafkaAdminClient:
        # kafka-python 3 sends each request to a random broker of its
        # metadata and raises a refused connection instead of trying
        # another: bootstrap from the running brokers only (tests that
        # kill one wait until the metadata no longer names it).
        running = [b.bootstrap for b in cluster.brokers.values() if b.running]
        admin = KafkaAdminClient(bootstrap_servers=",".join(running), request_timeout_ms=30_000)
        made.append(admin)
        return admin

    yield make
    for admin in made:
        admin.close()


def create_with_replicas(cluster, name: str, replicas: list[int]) -> None:
    futures = cluster.admin.create_topics([NewTopic(name, num_partitions=1,
                                                    replica_assignment=[replicas])])
    futures[name].result(timeout=30)
    cluster.wait_for(lambda: cluster.fully_replicated(name, 1, len(replicas)),
                     f"{name} has a leader and a full ISR")


def kill_and_wait_until_gone(cluster, broker_id: int) -> None:
    """SIGKILL a broker and wait until its session expired: Metadata no
    longer names it, so no client picks it."""
    cluster.brokers[broker_id].kill()
    cluster.wait_for(lambda: broker_id not in cluster.metadata().brokers,
                     f"broker {broker_id} left the cluster")


def replicas_of(cluster, topic: str) -> list[int]:
    found = cluster.partitions(topic).get(0)
    return list(found.replicas) if found is not None else []


def holds(cluster, broker_id: int, topic: str) -> bool:
    return (cluster.brokers[broker_id].data_dir / f"{topic}-0").exists()


def produce_numbered(cluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    for seq in range(count):
        producer.produce(topic, value=f"0:{seq}".encode(), partition=0)
        if seq % 1000 == 999:
            producer.poll(0)
    assert producer.flush(60) == 0


def test_moving_a_partition_under_load_keeps_every_acknowledged_message(cluster, admin_factory):
    create_with_replicas(cluster, "moved", [1, 2])
    admin = admin_factory(cluster)
    load = ProducerLoad(cluster, "moved", 1, max_messages=200_000, max_seconds=90, rate=5_000).start()
    try:
        wait_for_progress(cluster, load, 3000, "the producer writes before the move")
        result = admin.alter_partition_reassignments({TopicPartition("moved", 0): [2, 3]})
        assert result == {TopicPartition("moved", 0): None}
        cluster.wait_for(lambda: not admin.list_partition_reassignments()
                         and replicas_of(cluster, "moved") == [2, 3],
                         "the move to [2, 3] completed", timeout=60)
        cluster.wait_for(lambda: not holds(cluster, 1, "moved"),
                         "broker 1 deleted its replica")
        wait_for_progress(cluster, load, 3000, "the producer writes after the move")
    finally:
        load.stop()
    assert not load.errors, load.errors[:5]
    partition = cluster.partitions("moved")[0]
    assert partition.leader in (2, 3) and sorted(partition.isrs) == [2, 3]
    assert holds(cluster, 3, "moved")
    found = consume_all(cluster, "moved", 1, timeout=60)
    assert check_acknowledged_survived(load, found) == load.acked_count() >= 6000
    assert len(found[0]) == load.acked_count()  # once each: no duplicate, no stray


def test_replication_factor_grows_from_one_to_three_with_the_command_line(cluster, tmp_path):
    create_with_replicas(cluster, "grow", [1])
    produce_numbered(cluster, "grow", 2000)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "grow", "partition": 0, "replicas": [1, 2, 3]}]}))
    refused = cli(cluster, "--reassignment-json-file", str(plan), "--execute",
                  "--disallow-replication-factor-change")
    assert refused.returncode == 1
    assert ("Error on grow-0: INVALID_REPLICATION_FACTOR: The replication factor is changed "
            "from 1 to 3") in refused.stderr
    assert replicas_of(cluster, "grow") == [1]
    execute = cli(cluster, "--reassignment-json-file", str(plan), "--execute")
    assert execute.returncode == 0, execute.stderr
    assert '"replicas":[1]' in execute.stdout  # the rollback plan: where it was
    assert "Successfully started partition reassignment for grow-0" in execute.stdout
    cluster.wait_for(lambda: cli(cluster, "--reassignment-json-file", str(plan),
                                 "--verify").returncode == 0, "--verify says complete")
    verify = cli(cluster, "--reassignment-json-file", str(plan), "--verify")
    assert "Reassignment of partition grow-0 is completed." in verify.stdout
    assert cli(cluster, "--list").stdout.strip() == "No partition reassignments found."
    cluster.wait_for(lambda: cluster.fully_replicated("grow", 1, 3), "an ISR of three")
    assert replicas_of(cluster, "grow") == [1, 2, 3]
    assert all(holds(cluster, b, "grow") for b in (1, 2, 3))
    values = [value for _, value in consume_all(cluster, "grow", 1)[0]]
    assert values == [f"0:{seq}" for seq in range(2000)]


def test_execute_while_a_move_is_in_progress_needs_additional(cluster, tmp_path):
    create_with_replicas(cluster, "busy", [1, 2])
    cluster.brokers[2].kill()  # the move to [2, 3] stays in progress while 2 is down
    cluster.wait_for(lambda: cluster.partitions("busy")[0].isrs == [1], "broker 2 left the ISR")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for plan, replicas in ((first, [2, 3]), (second, [1, 3])):
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "busy", "partition": 0, "replicas": replicas}]}))
    assert cli(cluster, "--reassignment-json-file", str(first), "--execute").returncode == 0
    moving = "busy-0: replicas: 2,3,1. adding: 3. removing: 1."
    assert moving in cli(cluster, "--list").stdout

    refused = cli(cluster, "--reassignment-json-file", str(second), "--execute")
    assert refused.returncode == 1
    assert "Use --additional" in refused.stderr and "In progress: busy-0" in refused.stderr
    assert "Current partition replica assignment" not in refused.stdout  # nothing was sent
    assert moving in cli(cluster, "--list").stdout

    replaced = cli(cluster, "--reassignment-json-file", str(second), "--execute", "--additional")
    assert replaced.returncode == 0, replaced.stderr
    cluster.wait_for(lambda: replicas_of(cluster, "busy") == [1, 3]
                     and cli(cluster, "--list").stdout.strip() == "No partition reassignments found.",
                     "the replacing move to [1, 3] completed")


def test_a_replica_removed_while_its_broker_was_down_is_deleted_when_it_returns(cluster,
                                                                                admin_factory):
    create_with_replicas(cluster, "left", [1, 2])
    produce_numbered(cluster, "left", 500)
    cluster.brokers[1].kill()
    cluster.wait_for(lambda: cluster.partitions("left")[0].isrs == [2], "broker 1 left the ISR")
    left = TopicPartition("left", 0)
    assert admin_factory(cluster).alter_partition_reassignments({left: [2, 3]}) == {left: None}
    cluster.wait_for(lambda: replicas_of(cluster, "left") == [2, 3]
                     and cluster.fully_replicated("left", 1, 2), "the move to [2, 3] completed")
    assert holds(cluster, 1, "left")  # nobody could tell broker 1
    cluster.brokers[1].start()
    cluster.wait_for(lambda: not holds(cluster, 1, "left"), "broker 1 deleted its stray log")
    assert [v for _, v in consume_all(cluster, "left", 1)[0]] == [f"0:{s}" for s in range(500)]


def test_cancelling_returns_a_partition_to_its_original_replicas(cluster, admin_factory):
    create_with_replicas(cluster, "undo", [1, 2])
    produce_numbered(cluster, "undo", 500)
    cluster.brokers[2].kill()  # broker 2 cannot rejoin the ISR: the move stays in progress
    cluster.wait_for(lambda: cluster.partitions("undo")[0].isrs == [1], "broker 2 left the ISR")
    admin = admin_factory(cluster)
    undo = TopicPartition("undo", 0)
    assert admin.alter_partition_reassignments({undo: [2, 3]}) == {undo: None}
    cluster.wait_for(lambda: holds(cluster, 3, "undo"), "broker 3 started its replica")
    assert admin.list_partition_reassignments() == {undo: {
        "replicas": [2, 3, 1], "adding_replicas": [3], "removing_replicas": [1]}}
    listed = cli(cluster, "--list")
    assert "undo-0: replicas: 2,3,1. adding: 3. removing: 1." in listed.stdout

    assert admin.alter_partition_reassignments({undo: None}) == {undo: None}
    assert admin.list_partition_reassignments() == {}
    # Back to the origin replicas; like Kafka, in the order the moving set
    # listed them (target first), so the preferred leader may differ.
    cluster.wait_for(lambda: sorted(replicas_of(cluster, "undo")) == [1, 2], "back on 1 and 2")
    cluster.wait_for(lambda: not holds(cluster, 3, "undo"), "broker 3 deleted its replica")
    result = admin.alter_partition_reassignments({undo: None})
    assert result == {undo: NoReassignmentInProgressError}
    cluster.brokers[2].start()
    cluster.wait_for(lambda: cluster.fully_replicated("undo", 1, 2), "broker 2 back in the ISR")
    assert [v for _, v in consume_all(cluster, "undo", 1)[0]] == [f"0:{s}" for s in range(500)]


def test_a_new_controller_finishes_a_move_its_predecessor_started(cluster, admin_factory):
    controller = cluster.metadata().controller_id
    a, b = sorted(set(cluster.brokers) - {controller})
    create_with_replicas(cluster, "resumed", [a, b])
    produce_numbered(cluster, "resumed", 500)
    cluster.brokers[b].kill()  # the move to [b, controller] cannot finish while b is down
    cluster.wait_for(lambda: cluster.partitions("resumed")[0].isrs == [a], f"{b} left the ISR")
    resumed = TopicPartition("resumed", 0)
    assert admin_factory(cluster).alter_partition_reassignments(
        {resumed: [b, controller]}) == {resumed: None}
    cluster.wait_for(lambda: holds(cluster, controller, "resumed"), "the new replica started")
    cluster.brokers[controller].kill()
    cluster.wait_for(lambda: cluster.metadata().controller_id == a, f"{a} took over")
    moving = {resumed: {"replicas": [b, controller, a], "adding_replicas": [controller],
                        "removing_replicas": [a]}}
    assert admin_factory(cluster).list_partition_reassignments() == moving

    cluster.brokers[b].start()
    cluster.brokers[controller].start()
    admin = admin_factory(cluster)
    cluster.wait_for(lambda: not admin.list_partition_reassignments()
                     and replicas_of(cluster, "resumed") == [b, controller],
                     "the new controller completed the move", timeout=60)
    cluster.wait_for(lambda: not holds(cluster, a, "resumed"), f"{a} deleted its replica")
    cluster.wait_for(lambda: cluster.fully_replicated("resumed", 1, 2), "an ISR of two")
    assert [v for _, v in consume_all(cluster, "resumed", 1)[0]] == [f"0:{s}" for s in range(500)]


# Deletion tests: the clients here refresh metadata of topics they named
# (librdkafka every 200 ms, see Cluster.admin), which would re-create a
# deleted topic on a broker that auto-creates, as it would on Kafka.
NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}


def test_a_topic_deleted_while_a_partition_moves_goes_once_the_move_completes(cluster_factory,
                                                                             admin_factory):
    """Kafka's controller makes the topic ineligible for deletion while a
    partition of it is reassigned: DeleteTopics queues it and times out,
    the topic stays whole (no new move, no re-creation), and it goes once
    the move completes."""
    cluster = cluster_factory(overrides=NO_AUTO_CREATE)
    create_with_replicas(cluster, "doomed", [1, 2])
    produce_numbered(cluster, "doomed", 200)
    cluster.brokers[2].kill()  # the move to [2, 3] cannot finish while 2 is down
    cluster.wait_for(lambda: cluster.partitions("doomed")[0].isrs == [1], "broker 2 left the ISR")
    admin = admin_factory(cluster)
    doomed = TopicPartition("doomed", 0)
    assert admin.alter_partition_reassignments({doomed: [2, 3]}) == {doomed: None}

    futures = cluster.admin.delete_topics(["doomed"], operation_timeout=2, request_timeout=30)
    with pytest.raises(KafkaException) as raised:
        futures["doomed"].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT
    assert replicas_of(cluster, "doomed") == [2, 3, 1]
    assert admin.alter_partition_reassignments({doomed: [1, 3]}) == {
        doomed: UnknownTopicOrPartitionError}
    assert admin.alter_partition_reassignments({doomed: None}) == {
        doomed: UnknownTopicOrPartitionError}
    recreated = cluster.admin.create_topics([NewTopic("doomed", 1, 1)])["doomed"]
    with pytest.raises(KafkaException) as raised:
        recreated.result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert "marked for deletion" in raised.value.args[0].str()
    assert all(holds(cluster, b, "doomed") for b in (1, 3))

    cluster.brokers[2].start()
    cluster.wait_for(lambda: "doomed" not in cluster.metadata().topics, "the topic was deleted",
                     timeout=60)
    cluster.wait_for(lambda: not any(holds(cluster, b, "doomed") for b in (1, 2, 3)),
                     "every broker deleted its replica")
    assert admin.list_partition_reassignments() == {}
    cluster.admin.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(timeout=30)


def test_a_new_controller_keeps_a_deletion_queued_behind_a_move(cluster_factory, admin_factory):
    """The controller dies while a partition moves to it and a deletion
    waits for the move. The new controller takes the dead one out of the
    ISR it finds in ZooKeeper (Kafka's onControllerFailover): the move
    completes only once its whole target is back in sync, and then the
    topic goes from every broker. With the leaders' lag bound far away
    (60 s), only a controller takes a dead broker out of an ISR, so the
    test sees the controller's doing and nothing else's."""
    cluster = cluster_factory(overrides={**NO_AUTO_CREATE, "replica.lag.time.max.ms": "60000"})
    controller = cluster.metadata().controller_id
    a, b = sorted(set(cluster.brokers) - {controller})
    create_with_replicas(cluster, "queued", [a, b])
    kill_and_wait_until_gone(cluster, b)  # the move to [b, controller] cannot finish while b is down
    cluster.wait_for(lambda: cluster.partitions("queued")[0].isrs == [a], f"{b} left the ISR")
    queued = TopicPartition("queued", 0)
    assert admin_factory(cluster).alter_partition_reassignments(
        {queued: [b, controller]}) == {queued: None}
    cluster.wait_for(lambda: sorted(cluster.partitions("queued")[0].isrs) == sorted([a, controller]),
                     f"the new replica on {controller} joined the ISR")
    futures = cluster.admin.delete_topics(["queued"], operation_timeout=1, request_timeout=30)
    with pytest.raises(KafkaException) as raised:
        futures["queued"].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT
    cluster.brokers[controller].kill()
    cluster.wait_for(lambda: cluster.metadata().controller_id == a, f"{a} took over")
    cluster.wait_for(lambda: cluster.partitions("queued")[0].isrs == [a],
                     f"the new controller took the dead {controller} out of the ISR")
    assert replicas_of(cluster, "queued") == [b, controller, a]  # still there, still moving

    # b back in sync is not the whole target: the move and the deletion wait.
    cluster.brokers[b].start()
    cluster.wait_for(lambda: sorted(cluster.partitions("queued")[0].isrs) == sorted([a, b]),
                     f"{b} back in the ISR")
    assert replicas_of(cluster, "queued") == [b, controller, a]
    assert all(holds(cluster, n, "queued") for n in cluster.brokers)

    cluster.brokers[controller].start()
    cluster.wait_for(lambda: "queued" not in cluster.metadata().topics,
                     "the new controller deleted the topic after the move", timeout=60)
    cluster.wait_for(lambda: not any(holds(cluster, n, "queued") for n in cluster.brokers),
                     "every broker deleted its replica")


def test_delete_topics_answers_once_the_topic_is_gone_and_it_can_be_created_again(cluster_factory):
    cluster = cluster_factory(overrides=NO_AUTO_CREATE)
    create_with_replicas(cluster, "brief", [1, 2])
    futures = cluster.admin.delete_topics(["brief"], operation_timeout=30, request_timeout=30)
    assert futures["brief"].result(timeout=30) is None
    # Answered only once the broker's metadata dropped it: the same name
    # is free at once.
    create_with_replicas(cluster, "brief", [2, 3])
    # Each Metadata answer comes from one broker's cache, which the
    # controller updates after the fact (as in Kafka): one may not name it yet.
    cluster.wait_for(lambda: replicas_of(cluster, "brief") == [2, 3], "brief is on brokers 2 and 3")
    cluster.wait_for(lambda: not holds(cluster, 1, "brief"), "broker 1 deleted the old replica")


def test_bad_reassignments_get_kafkas_errors(cluster, admin_factory):
    create_with_replicas(cluster, "strict", [1, 2])
    admin = admin_factory(cluster)
    strict = TopicPartition("strict", 0)
    assert admin.alter_partition_reassignments({strict: [2, 2]}) == {
        strict: InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({strict: [1, 42]}) == {
        strict: InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({strict: [-1, 2]}) == {
        strict: InvalidReplicationAssignmentError}
    missing, beyond = TopicPartition("no-such-topic", 0), TopicPartition("strict", 7)
    assert admin.alter_partition_reassignments({missing: [1], beyond: [1]}) == {
        missing: UnknownTopicOrPartitionError, beyond: UnknownTopicOrPartitionError}
    assert admin.alter_partition_reassignments({strict: None}) == {
        strict: NoReassignmentInProgressError}
    assert admin.list_partition_reassignments() == {}
    assert replicas_of(cluster, "strict") == [1, 2]
    # The same replica set is a move that is done at once.
    assert admin.alter_partition_reassignments({strict: [1, 2]}) == {strict: None}
    assert admin.list_partition_reassignments() == {}


def test_a_broker_that_is_not_the_controller_passes_reassignments_on(cluster):
    create_with_replicas(cluster, "relayed", [1, 2])
    controller = cluster.metadata().controller_id
    other = min(set(cluster.brokers) - {controller})
    client = WireClient(cluster.brokers[other].port)
    try:
        def alter(replicas, allow_replication_factor_change=True):
            response = client.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, {
                "timeout_ms": 30_000,
                "allow_replication_factor_change": allow_replication_factor_change,
                "topics": [{"name": "relayed", "partitions": [
                    {"partition_index": 0, "replicas": replicas}]}]})
            assert response.error_code == ErrorCode.NONE
            assert response.allow_replication_factor_change is allow_replication_factor_change
            return response.responses[0].partitions[0]
        assert alter([1, 1]).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        # KIP-860 passed on to the controller (v1 between brokers).
        refused = alter([1, 2, 3], allow_replication_factor_change=False)
        assert refused.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
        assert refused.error_message == "The replication factor is changed from 2 to 3"
        assert alter([3, 2]).error_code == ErrorCode.NONE
        cluster.wait_for(lambda: replicas_of(cluster, "relayed") == [3, 2]
                         and not client.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {
                             "timeout_ms": 30_000, "topics": None}).topics,
                         "the move through a non-controller completed")
    finally:
        client.close()


def test_generate_proposes_a_plan_over_the_given_brokers(cluster, tmp_path):
    create_with_replicas(cluster, "spread", [1, 2])
    topics = tmp_path / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"spread"}]}')
    generated = cli(cluster, "--topics-to-move-json-file", str(topics), "--broker-list", "2,3",
                    "--generate")
    assert generated.returncode == 0, generated.stderr
    current, proposed = [json.loads(line) for line in generated.stdout.splitlines()
                         if line.startswith("{")]
    assert [p["replicas"] for p in current["partitions"]] == [[1, 2]]
    assert [sorted(p["replicas"]) for p in proposed["partitions"]] == [[2, 3]]
    too_few = cli(cluster, "--topics-to-move-json-file", str(topics), "--broker-list", "3",
                  "--generate")
    assert too_few.returncode == 1 and "replication factor 2" in too_few.stderr
    unknown = cli(cluster, "--topics-to-move-json-file", str(topics), "--broker-list", "2,9",
                  "--generate")
    assert unknown.returncode == 1 and "[9]" in unknown.stderr


def cli(cluster, *args: str) -> subprocess.CompletedProcess:
    return kcore_cli("reassign-partitions", "--bootstrap-server", cluster.bootstrap, *args)

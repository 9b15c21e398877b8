"""Partition reassignment on a single node (no ZooKeeper) and on the
processes of one node: a replica cannot move, so only the replica set a
partition has is accepted (a move already done), and everything else
gets Kafka's error. Driven by kafka-python's
KafkaAdminClient, a real client."""
from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from tests.support import BrokerProcess


def test_a_single_node_accepts_only_its_own_replica_set(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("solo", 2, 1)])
        me = admin.describe_cluster()["brokers"][0]["broker_id"]
        first, second = TopicPartition("solo", 0), TopicPartition("solo", 1)
        assert admin.alter_partition_reassignments({first: [me]}) == {first: None}
        assert admin.alter_partition_reassignments({first: [me, me + 1], second: [me + 1]}) == {
            first: InvalidReplicationAssignmentError, second: InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({first: None}) == {
            first: NoReassignmentInProgressError}
        missing = TopicPartition("solo", 5)
        assert admin.alter_partition_reassignments({missing: [me]}) == {
            missing: UnknownTopicOrPartitionError}
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()


def test_the_processes_of_a_node_keep_their_partitions(tmp_path):
    supervisor = BrokerProcess(tmp_path / "node", {"num.processes": "2"}).start()
    admin = KafkaAdminClient(bootstrap_servers=supervisor.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("kept", 2, 1)])
        owners = {p["partition_index"]: p["replica_nodes"] for p in
                  admin.describe_topics(["kept"])[0]["partitions"]}
        first = TopicPartition("kept", 0)
        other = owners[1][0] if owners[1] != owners[0] else owners[0][0] + 1
        assert admin.alter_partition_reassignments({first: owners[0]}) == {first: None}
        assert admin.alter_partition_reassignments({first: [other]}) == {
            first: InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({first: None}) == {
            first: NoReassignmentInProgressError}
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()
        supervisor.kill()

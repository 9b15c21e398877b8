"""Transaction verification across brokers (KIP-890 part 1): the leader
of a partition asks the transaction coordinator, another broker, with
AddPartitionsToTxn v5 verify_only before it appends a transactional
batch. Three brokers and a real ZooKeeper; the raw wire client produces
to each partition's leader, and confluent-kafka's transactional producer
commits and aborts across partitions whose leaders are not the
coordinator."""
from __future__ import annotations

import time
import uuid

from kcore.protocol.errors import ErrorCode as E
from tests.cluster.test_txn_failover import coordinator_of
from tests.integration.test_txn_wire import add_partitions, describe, end_txn, init, produce_transactional
from tests.support.transactions import READ_COMMITTED, labelled, read_to_end, txn_producer
from tests.support.transactions import values as values_of
from tests.support.wire import WireClient

TOPIC = "verified"
CLIENTS_TOPIC = "verified-clients"
PARTITIONS = 3
SETTINGS = {"transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2", "offsets.topic.replication.factor": "3",
            "min.insync.replicas": "2"}
WAIT_S = 30.0


def remote_transaction(cluster) -> tuple[str, int, list[int]]:
    """A transactional id whose coordinator leads none of two partitions of
    TOPIC: (id, coordinator, those two partitions)."""
    # Each broker answers Metadata from its own cache, which may not name
    # a new partition's leader yet (seen: -1 for two of three).
    leaders = {p: cluster.wait_leader(TOPIC, p) for p in range(PARTITIONS)}
    for attempt in range(200):
        transactional_id = f"remote-{attempt}-{uuid.uuid4().hex[:4]}"
        coordinator = coordinator_of(cluster, transactional_id)
        elsewhere = [p for p, leader in leaders.items() if leader not in (coordinator, -1)]
        if coordinator > 0 and len(elsewhere) >= 2:
            return transactional_id, coordinator, elsewhere[:2]
    raise AssertionError(f"no transactional id coordinated away from two leaders of {leaders}")


def wait_for_state(client, transactional_id: str, state: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while describe(client, transactional_id).transaction_state != state:
        assert time.monotonic() < deadline, f"{transactional_id} never reached {state}"
        time.sleep(0.05)


def test_a_leader_verifies_with_a_remote_coordinator(cluster_factory):
    cluster = cluster_factory(3, SETTINGS)
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    transactional_id, coordinator_id, (added, stray) = remote_transaction(cluster)
    coordinator = WireClient(cluster.brokers[coordinator_id].port, timeout=30)
    leaders = {p: WireClient(cluster.brokers[cluster.wait_leader(TOPIC, p)].port, timeout=30)
               for p in (added, stray)}
    try:
        deadline = time.monotonic() + WAIT_S
        while (started := init(coordinator, transactional_id)).error_code != E.NONE:
            assert time.monotonic() < deadline, started.error_code
            time.sleep(0.1)
        producer_id, epoch = started.producer_id, started.producer_epoch
        assert add_partitions(coordinator, transactional_id, producer_id, epoch, {TOPIC: [added]}) == {
            (TOPIC, added): E.NONE}

        def produce(partition: int, sequence: int, value: bytes) -> int:
            return produce_transactional(leaders[partition], transactional_id, producer_id, epoch, sequence,
                                         [value], partition, TOPIC)[0]

        assert produce(stray, 0, b"stray") == E.INVALID_TXN_STATE
        assert produce(added, 0, b"first") == E.NONE
        assert produce(added, 1, b"second") == E.NONE
        assert end_txn(coordinator, transactional_id, producer_id, epoch, True) == E.NONE
        wait_for_state(coordinator, transactional_id, "CompleteCommit")
        assert produce(added, 2, b"late") == E.INVALID_TXN_STATE
    finally:
        coordinator.close()
        for client in leaders.values():
            client.close()
    committed = read_to_end(cluster.bootstrap, TOPIC, list(range(PARTITIONS)), READ_COMMITTED)
    assert [r.value for r in committed if r.partition == added] == [b"first", b"second"]
    assert [r.value for r in committed if r.partition == stray] == []

    # A real client's transactions across every partition of a topic, the
    # coordinator leading at most one of them: committed ones read back,
    # aborted ones not.
    cluster.create_topic(CLIENTS_TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    producer = txn_producer(cluster.bootstrap, transactional_id)
    for round_ in range(3):
        for commit in (True, False):
            label = f"{'commit' if commit else 'abort'}-{round_}"
            producer.begin_transaction()
            for partition in range(PARTITIONS):
                for value in labelled(f"{label}-{partition}", 5):
                    producer.produce(CLIENTS_TOPIC, value, partition=partition)
            assert producer.flush(WAIT_S) == 0
            if commit:
                producer.commit_transaction(WAIT_S)
            else:
                producer.abort_transaction(WAIT_S)
    committed = read_to_end(cluster.bootstrap, CLIENTS_TOPIC, list(range(PARTITIONS)), READ_COMMITTED)
    for partition in range(PARTITIONS):
        assert values_of([r for r in committed if r.partition == partition]) == [
            value for round_ in range(3) for value in labelled(f"commit-{round_}-{partition}", 5)]

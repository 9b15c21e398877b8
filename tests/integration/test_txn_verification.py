"""Transaction verification (KIP-890 part 1) over the wire, on one broker:
before it appends a transactional batch, a partition's leader checks with
the transaction coordinator that the partition is in the producer's
ongoing transaction. What Jepsen found without it (a hanging transaction
from a write to a partition never added, a late write after the abort, a
zombie's write under its old epoch) is refused with Kafka's error and
nothing is appended; legitimate transactions go on. AddPartitionsToTxn
v4-5 with verify_only answers without changing the transaction."""
from __future__ import annotations

import time
import uuid

import pytest

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.integration.test_txn_wire import (
    WAIT_S,
    add_partitions,
    describe,
    end_txn,
    init,
    produce_transactional,
    read_committed,
    snapshot,
    start_txn_broker,
)
from tests.support.wire import WireClient

TOPIC = "verified"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = start_txn_broker(tmp_path_factory.mktemp("txn-verification"), {TOPIC: 3})
    yield process
    process.kill()


@pytest.fixture
def client(broker):
    connection = WireClient(broker.port)
    yield connection
    connection.close()


def begin(client, partitions: list[int]) -> tuple[str, int, int]:
    """A fresh transactional id, its producer id and epoch, with
    ``partitions`` of TOPIC added to its transaction."""
    transactional_id = f"verified-{uuid.uuid4().hex[:8]}"
    started = init(client, transactional_id)
    assert started.error_code == E.NONE
    if partitions:
        assert set(add_partitions(client, transactional_id, started.producer_id, started.producer_epoch,
                                  {TOPIC: partitions}).values()) == {E.NONE}
    return transactional_id, started.producer_id, started.producer_epoch


def produce(client, transactional_id: str | None, producer_id: int, epoch: int, sequence: int,
            values: list[bytes], partition: int = 0) -> tuple[int, int]:
    return produce_transactional(client, transactional_id, producer_id, epoch, sequence, values,
                                 partition, TOPIC)


def refused(client, transactional_id: str | None, producer_id: int, epoch: int, sequence: int,
            partition: int) -> int:
    """The error of a transactional produce, having checked that nothing
    was appended and that no transaction hangs on the partition."""
    end_before = log_end(client, partition)
    code, _ = produce(client, transactional_id, producer_id, epoch, sequence, [b"refused"], partition)
    assert log_end(client, partition) == end_before
    assert read_committed(client, TOPIC, partition)[1] == end_before
    return code


def log_end(client, partition: int) -> int:
    response = client.request(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return response.topics[0].partitions[0].offset


def wait_for_state(client, transactional_id: str, state: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while describe(client, transactional_id).transaction_state != state:
        assert time.monotonic() < deadline, f"{transactional_id} never reached {state}"
        time.sleep(0.02)


def verify_only(client, transactional_id: str, producer_id: int, epoch: int,
                partitions: dict[str, list[int]], version: int) -> dict[tuple[str, int], int]:
    response = client.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, {"transactions": [{
        "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch,
        "verify_only": True, "topics": [{"name": t, "partitions": p} for t, p in partitions.items()]}]})
    assert response.error_code == E.NONE
    (result,) = response.results_by_transaction
    assert result.transactional_id == transactional_id
    return {(t.name, p.partition_index): p.partition_error_code
            for t in result.topic_results for p in t.results_by_partition}


def test_a_batch_for_a_partition_never_added_is_refused_and_nothing_is_appended(client):
    transactional_id, producer_id, epoch = begin(client, [0])
    assert refused(client, transactional_id, producer_id, epoch, 0, partition=1) == E.INVALID_TXN_STATE
    # The partition added takes the transaction's batches; once it holds one,
    # the next need no question to the coordinator.
    for sequence, value in enumerate([b"first", b"second"]):
        code, _ = produce(client, transactional_id, producer_id, epoch, sequence, [value])
        assert code == E.NONE
    assert end_txn(client, transactional_id, producer_id, epoch, True) == E.NONE
    wait_for_state(client, transactional_id, "CompleteCommit")
    assert read_committed(client, TOPIC)[0][-2:] == [b"first", b"second"]


def test_a_late_write_after_the_abort_is_refused(client):
    transactional_id, producer_id, epoch = begin(client, [2])
    assert produce(client, transactional_id, producer_id, epoch, 0, [b"aborted"],
                                 partition=2)[0] == E.NONE
    assert end_txn(client, transactional_id, producer_id, epoch, False) == E.NONE
    wait_for_state(client, transactional_id, "CompleteAbort")
    # The same producer and epoch, the next sequence: a write delayed past the abort.
    assert refused(client, transactional_id, producer_id, epoch, 1, partition=2) == E.INVALID_TXN_STATE


def test_a_zombie_writing_under_its_old_epoch_is_fenced(client):
    transactional_id, producer_id, epoch = begin(client, [0])
    assert produce(client, transactional_id, producer_id, epoch, 0, [b"zombie-1"])[0] == E.NONE
    # A new instance of the producer: InitProducerId aborts the open
    # transaction under a bumped epoch and answers with a newer one.
    deadline = time.monotonic() + WAIT_S
    while (fresh := init(client, transactional_id)).error_code != E.NONE:
        assert fresh.error_code == E.CONCURRENT_TRANSACTIONS and time.monotonic() < deadline
        time.sleep(0.02)
    assert fresh.producer_epoch > epoch
    assert refused(client, transactional_id, producer_id, epoch, 0, partition=1) == E.INVALID_PRODUCER_EPOCH


def test_a_transactional_batch_in_a_request_without_a_transactional_id_is_refused(client):
    transactional_id, producer_id, epoch = begin(client, [1])
    assert refused(client, None, producer_id, epoch, 0, partition=1) == E.INVALID_TXN_STATE
    assert end_txn(client, transactional_id, producer_id, epoch, False) == E.NONE


def test_verify_only_answers_per_partition_and_changes_nothing(client):
    transactional_id, producer_id, epoch = begin(client, [0])
    before = snapshot(client, transactional_id)
    asked = {TOPIC: [0, 1]}
    assert verify_only(client, transactional_id, producer_id, epoch, asked, 5) == {
        (TOPIC, 0): E.NONE, (TOPIC, 1): E.TRANSACTION_ABORTABLE}
    assert verify_only(client, transactional_id, producer_id, epoch, asked, 4) == {
        (TOPIC, 0): E.NONE, (TOPIC, 1): E.INVALID_TXN_STATE}   # v4 predates TRANSACTION_ABORTABLE
    assert verify_only(client, transactional_id, producer_id, epoch + 1, asked, 5) == {
        (TOPIC, 0): E.PRODUCER_FENCED, (TOPIC, 1): E.PRODUCER_FENCED}
    assert verify_only(client, transactional_id, producer_id + 1, epoch, asked, 5) == {
        (TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING, (TOPIC, 1): E.INVALID_PRODUCER_ID_MAPPING}
    assert verify_only(client, transactional_id, producer_id, epoch, {TOPIC: [0], "no-such": [0]}, 5) == {
        (TOPIC, 0): E.OPERATION_NOT_ATTEMPTED, ("no-such", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert snapshot(client, transactional_id) == before
    # Without verify_only, v4 adds the partitions as v3 does.
    response = client.request(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [{
        "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch,
        "verify_only": False, "topics": [{"name": TOPIC, "partitions": [1]}]}]})
    assert response.results_by_transaction[0].topic_results[0].results_by_partition[0] \
        .partition_error_code == E.NONE
    assert sorted(describe(client, transactional_id).topics[0].partitions) == [0, 1]
    assert end_txn(client, transactional_id, producer_id, epoch, False) == E.NONE


def test_with_verification_off_the_stray_batch_is_appended_and_hangs(tmp_path):
    """What the switch turns off (``transaction.partition.verification.enable``):
    the batch of a partition never added is appended, and its transaction,
    which no marker will end, holds the last stable offset back."""
    broker = start_txn_broker(tmp_path, {TOPIC: 3}, {"transaction.partition.verification.enable": "false"})
    client = WireClient(broker.port)
    try:
        transactional_id, producer_id, epoch = begin(client, [0])
        end_before = log_end(client, 1)
        code, _ = produce(client, transactional_id, producer_id, epoch, 0, [b"stray"],
                                        partition=1)
        assert code == E.NONE and log_end(client, 1) == end_before + 1
        assert read_committed(client, TOPIC, 1)[1] == end_before
    finally:
        client.close()
        broker.kill()

"""The transaction APIs over the wire with bad input: each gets Kafka's
error code, and none changes anything: DescribeTransactions shows the same
state afterwards, and a legitimate transaction still works."""
from __future__ import annotations

import time
import uuid

import pytest

from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support import BrokerProcess
from tests.support.wire import WireClient, create_topic, fetch_body, produce_body

MAX_TIMEOUT_MS = 60_000
SETTINGS = {"transaction.max.timeout.ms": str(MAX_TIMEOUT_MS),
            "transaction.state.log.num.partitions": "4"}
TOPIC = "txn-wire"
WAIT_S = 10.0


def start_txn_broker(directory, topics: dict[str, int], overrides=None) -> BrokerProcess:
    """A broker with ``topics`` (name -> partitions) whose transaction
    coordinator answers."""
    process = BrokerProcess(directory / "data", {**SETTINGS, **(overrides or {})}).start()
    client = WireClient(process.port)
    try:
        for name, partitions in topics.items():
            create_topic(client, name, partitions=partitions)
        # The first lookup creates __transaction_state; ask until it has leaders.
        deadline = time.monotonic() + WAIT_S
        while find_coordinator(client, "warm-up").error_code != E.NONE:
            assert time.monotonic() < deadline, "no transaction coordinator"
            time.sleep(0.05)
    finally:
        client.close()
    return process


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = start_txn_broker(tmp_path_factory.mktemp("txn-wire"), {TOPIC: 2, "txn-wire-other": 1})
    yield process
    process.kill()


@pytest.fixture(scope="module")
def unverified_broker(tmp_path_factory):
    """Transaction verification off (KIP-890), so that a test can write a
    transactional batch no coordinator knows of and mark it itself."""
    process = start_txn_broker(tmp_path_factory.mktemp("txn-wire-unverified"), {},
                               {"transaction.partition.verification.enable": "false"})
    yield process
    process.kill()


@pytest.fixture
def client(broker):
    connection = WireClient(broker.port)
    yield connection
    connection.close()


@pytest.fixture
def unverified_client(unverified_broker):
    connection = WireClient(unverified_broker.port)
    yield connection
    connection.close()


def find_coordinator(client, transactional_id: str):
    return client.request(ApiKey.FIND_COORDINATOR, 2, {"key": transactional_id, "key_type": 1})


def init(client, transactional_id: str, timeout_ms: int = 30_000, version: int = 4,
         producer_id: int = -1, producer_epoch: int = -1):
    return client.request(ApiKey.INIT_PRODUCER_ID, version, {
        "transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
        "producer_id": producer_id, "producer_epoch": producer_epoch})


def add_partitions(client, transactional_id: str, producer_id: int, epoch: int,
                   partitions: dict[str, list[int]], version: int = 3) -> dict[tuple[str, int], int]:
    response = client.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, {
        "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": producer_id,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": p} for t, p in partitions.items()]})
    return {(t.name, p.partition_index): p.partition_error_code
            for t in response.results_by_topic_v3_and_below for p in t.results_by_partition}


def add_offsets(client, transactional_id: str, producer_id: int, epoch: int, group: str,
                version: int = 3) -> int:
    return client.request(ApiKey.ADD_OFFSETS_TO_TXN, version, {
        "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch,
        "group_id": group}).error_code


def end_txn(client, transactional_id: str, producer_id: int, epoch: int, commit: bool,
            version: int = 3) -> int:
    return client.request(ApiKey.END_TXN, version, {
        "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch,
        "committed": commit}).error_code


def describe(client, transactional_id: str):
    response = client.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})
    return response.transaction_states[0]


def snapshot(client, transactional_id: str) -> tuple:
    """What DescribeTransactions says, as a comparable value."""
    state = describe(client, transactional_id)
    return (state.error_code, state.transaction_state, state.producer_id, state.producer_epoch,
            state.transaction_timeout_ms, state.transaction_start_time_ms,
            sorted((t.topic, sorted(t.partitions)) for t in state.topics))


def write_markers(client, producer_id: int, epoch: int, coordinator_epoch: int, commit: bool,
                  partitions: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    response = client.request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [{
        "producer_id": producer_id, "producer_epoch": epoch, "transaction_result": commit,
        "coordinator_epoch": coordinator_epoch,
        "topics": [{"name": t, "partition_indexes": p} for t, p in partitions.items()]}]})
    return {(t.name, p.partition_index): p.error_code
            for m in response.markers for t in m.topics for p in t.partitions}


def produce_transactional(client, transactional_id: str, producer_id: int, epoch: int, sequence: int,
                          values: list[bytes], partition: int = 0, topic: str = TOPIC) -> tuple[int, int]:
    records = record_codec.build_batch(
        [record_codec.Record(value=v, key=None, headers=[], timestamp=1_700_000_000_000 + i)
         for i, v in enumerate(values)],
        producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, is_transactional=True)
    body = produce_body(topic, partition, bytes(records), acks=-1)
    body["transactional_id"] = transactional_id
    result = client.request(ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0]
    return result.error_code, result.base_offset


def read_committed(client, topic: str = TOPIC, partition: int = 0) -> tuple[list[bytes], int]:
    """Values a read_committed fetch from offset 0 returns (aborted
    transactions dropped, as a client does), and the LSO."""
    body = fetch_body(topic, partition, 0)
    body["isolation_level"] = 1
    data = client.request(ApiKey.FETCH, 11, body).responses[0].partitions[0]
    assert data.error_code == E.NONE
    aborted = {(a.producer_id, a.first_offset) for a in data.aborted_transactions or []}
    found = []
    for batch in record_codec.iter_batches(bytes(data.records)):
        if batch.is_control:
            continue
        if any(pid == batch.producer_id and first <= batch.base_offset for pid, first in aborted):
            continue
        found += [r.value for r in batch.records()]
    return found, data.last_stable_offset


class Txn:
    """A transactional id with the producer id and epoch InitProducerId gave it."""

    def __init__(self, client, prefix: str = "wire"):
        self.client = client
        self.id = f"{prefix}-{uuid.uuid4().hex[:8]}"
        response = init(client, self.id)
        assert response.error_code == E.NONE
        self.producer_id, self.epoch = response.producer_id, response.producer_epoch
        self.sequence = 0

    def snapshot(self) -> tuple:
        return snapshot(self.client, self.id)

    def commit_one(self, value: bytes, partition: int = 0) -> None:
        """A whole legitimate transaction: add, produce, commit; the value is
        then read by read_committed."""
        assert add_partitions(self.client, self.id, self.producer_id, self.epoch,
                              {TOPIC: [partition]}) == {(TOPIC, partition): E.NONE}
        code, _ = produce_transactional(self.client, self.id, self.producer_id, self.epoch, self.sequence,
                                        [value], partition)
        assert code == E.NONE
        self.sequence += 1
        assert end_txn(self.client, self.id, self.producer_id, self.epoch, True) == E.NONE
        wait_for_state(self.client, self.id, "CompleteCommit")
        assert value in read_committed(self.client, TOPIC, partition)[0]


def wait_for_state(client, transactional_id: str, state: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while describe(client, transactional_id).transaction_state != state:
        assert time.monotonic() < deadline, f"{transactional_id} never reached {state}"
        time.sleep(0.02)


# -- EndTxn ------------------------------------------------------------------------------------
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_end_txn_without_a_transaction_is_invalid_txn_state(client, commit):
    txn = Txn(client)
    before = txn.snapshot()
    assert before[1] == "Empty"
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, commit) == E.INVALID_TXN_STATE
    assert txn.snapshot() == before
    txn.commit_one(b"after-end-without-txn")


def test_end_txn_of_the_other_kind_after_a_commit_is_invalid_txn_state(client):
    txn = Txn(client)
    txn.commit_one(b"committed")
    before = txn.snapshot()
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, False) == E.INVALID_TXN_STATE
    # A retried commit is answered as the first was.
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, True) == E.NONE
    assert txn.snapshot() == before


@pytest.mark.parametrize(("version", "expected"), [(3, E.PRODUCER_FENCED), (2, E.PRODUCER_FENCED),
                                                   (1, E.INVALID_PRODUCER_EPOCH),
                                                   (0, E.INVALID_PRODUCER_EPOCH)])
@pytest.mark.parametrize("delta", [-1, 1], ids=["older-epoch", "newer-epoch"])
def test_end_txn_with_a_wrong_epoch_is_fenced(client, version, expected, delta):
    txn = Txn(client)
    txn.commit_one(b"bump")  # epoch stays; a second init bumps it above 0
    assert init(client, txn.id).producer_epoch == txn.epoch + 1
    txn.epoch += 1
    assert add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [0]}) == {(TOPIC, 0): E.NONE}
    before = txn.snapshot()
    assert before[1] == "Ongoing"
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch + delta, True, version) == expected
    assert txn.snapshot() == before
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, True) == E.NONE
    wait_for_state(client, txn.id, "CompleteCommit")


# -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------------
@pytest.mark.parametrize(("version", "expected"), [(3, E.PRODUCER_FENCED), (2, E.PRODUCER_FENCED),
                                                   (1, E.INVALID_PRODUCER_EPOCH),
                                                   (0, E.INVALID_PRODUCER_EPOCH)])
def test_add_partitions_with_a_wrong_epoch_is_fenced(client, version, expected):
    txn = Txn(client)
    before = txn.snapshot()
    errors = add_partitions(client, txn.id, txn.producer_id, txn.epoch + 1, {TOPIC: [0, 1]}, version)
    assert errors == {(TOPIC, 0): expected, (TOPIC, 1): expected}
    assert txn.snapshot() == before
    txn.commit_one(b"after-fenced-add")


@pytest.mark.parametrize(("version", "expected"), [(2, E.PRODUCER_FENCED), (1, E.INVALID_PRODUCER_EPOCH)])
def test_add_offsets_with_a_wrong_epoch_is_fenced(client, version, expected):
    txn = Txn(client)
    before = txn.snapshot()
    assert add_offsets(client, txn.id, txn.producer_id, txn.epoch + 1, "wire-group", version) == expected
    assert txn.snapshot() == before
    txn.commit_one(b"after-fenced-offsets")


def test_unknown_transactional_id_is_invalid_producer_id_mapping(client):
    unknown = f"never-initialised-{uuid.uuid4().hex[:8]}"
    assert add_partitions(client, unknown, 4242, 0, {TOPIC: [0]}) == {(TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert add_offsets(client, unknown, 4242, 0, "wire-group") == E.INVALID_PRODUCER_ID_MAPPING
    assert end_txn(client, unknown, 4242, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    assert describe(client, unknown).error_code == E.TRANSACTIONAL_ID_NOT_FOUND


def test_producer_id_not_the_transactional_ids_is_invalid_producer_id_mapping(client):
    txn = Txn(client)
    txn.commit_one(b"first")
    assert add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [1]}) == {(TOPIC, 1): E.NONE}
    before = txn.snapshot()
    other_id = txn.producer_id + 1000
    assert add_partitions(client, txn.id, other_id, txn.epoch, {TOPIC: [0]}) == \
        {(TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert add_offsets(client, txn.id, other_id, txn.epoch, "wire-group") == E.INVALID_PRODUCER_ID_MAPPING
    assert end_txn(client, txn.id, other_id, txn.epoch, True) == E.INVALID_PRODUCER_ID_MAPPING
    assert txn.snapshot() == before
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, False) == E.NONE
    wait_for_state(client, txn.id, "CompleteAbort")


def test_add_partitions_with_an_unknown_topic_fails_the_whole_request(client):
    txn = Txn(client)
    before = txn.snapshot()
    missing = f"no-such-topic-{uuid.uuid4().hex[:6]}"
    errors = add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [0, 1], missing: [0]})
    assert errors == {(TOPIC, 0): E.OPERATION_NOT_ATTEMPTED, (TOPIC, 1): E.OPERATION_NOT_ATTEMPTED,
                      (missing, 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    # A partition index past the topic's count is unknown too.
    errors = add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [0, 7]})
    assert errors == {(TOPIC, 0): E.OPERATION_NOT_ATTEMPTED, (TOPIC, 7): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert txn.snapshot() == before
    txn.commit_one(b"after-unknown-topic")


def test_add_partitions_to_an_ongoing_transaction_keeps_its_partitions(client):
    txn = Txn(client)
    assert add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [0]}) == {(TOPIC, 0): E.NONE}
    before = txn.snapshot()
    errors = add_partitions(client, txn.id, txn.producer_id, txn.epoch, {TOPIC: [1], "absent-topic": [0]})
    assert errors[("absent-topic", 0)] == E.UNKNOWN_TOPIC_OR_PARTITION
    assert txn.snapshot() == before
    assert before[6] == [(TOPIC, [0])]
    assert end_txn(client, txn.id, txn.producer_id, txn.epoch, False) == E.NONE
    wait_for_state(client, txn.id, "CompleteAbort")


# -- InitProducerId ------------------------------------------------------------------------------
@pytest.mark.parametrize("timeout_ms", [MAX_TIMEOUT_MS + 1, 0, -5])
def test_init_producer_id_with_a_bad_timeout_is_invalid_transaction_timeout(client, timeout_ms):
    fresh = f"bad-timeout-{uuid.uuid4().hex[:8]}"
    assert init(client, fresh, timeout_ms).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert describe(client, fresh).error_code == E.TRANSACTIONAL_ID_NOT_FOUND

    txn = Txn(client)
    before = txn.snapshot()
    response = init(client, txn.id, timeout_ms)
    assert (response.error_code, response.producer_id, response.producer_epoch) == \
        (E.INVALID_TRANSACTION_TIMEOUT, -1, -1)
    assert txn.snapshot() == before
    txn.commit_one(b"after-bad-timeout")


def test_init_producer_id_at_the_max_timeout_is_accepted(client):
    transactional_id = f"max-timeout-{uuid.uuid4().hex[:8]}"
    assert init(client, transactional_id, MAX_TIMEOUT_MS).error_code == E.NONE
    assert describe(client, transactional_id).transaction_timeout_ms == MAX_TIMEOUT_MS


def test_init_producer_id_with_a_stale_producer_epoch_is_fenced(client):
    """KIP-360 (v3+): a producer naming an epoch that is neither the current
    one nor the last one given out is a zombie."""
    txn = Txn(client)
    for _ in range(2):
        response = init(client, txn.id, version=4, producer_id=txn.producer_id, producer_epoch=txn.epoch)
        assert response.error_code == E.NONE
        txn.epoch = response.producer_epoch
    before = txn.snapshot()
    response = init(client, txn.id, version=4, producer_id=txn.producer_id, producer_epoch=txn.epoch - 2)
    assert response.error_code == E.PRODUCER_FENCED
    assert txn.snapshot() == before
    txn.commit_one(b"after-stale-init")


# -- WriteTxnMarkers ------------------------------------------------------------------------------
def test_write_txn_markers_from_an_older_coordinator_epoch_is_fenced(unverified_client):
    """A deposed coordinator's marker (coordinator epoch below one the
    partition has seen) is refused and writes nothing."""
    topic = f"markers-{uuid.uuid4().hex[:6]}"
    create_topic(unverified_client, topic)
    producer_id = unverified_client.request(ApiKey.INIT_PRODUCER_ID, 1, {
        "transactional_id": None, "transaction_timeout_ms": 0}).producer_id

    def open_transaction(sequence: int, value: bytes) -> None:
        code, _ = produce_transactional(unverified_client, "direct", producer_id, 0, sequence, [value], topic=topic)
        assert code == E.NONE

    open_transaction(0, b"first")
    assert write_markers(unverified_client, producer_id, 0, 7, True, {topic: [0]}) == {(topic, 0): E.NONE}
    open_transaction(1, b"second")
    _, lso_before = read_committed(unverified_client, topic)
    end_before = unverified_client.request(
        ApiKey.FETCH, 11, fetch_body(topic, 0, 0)).responses[0].partitions[0].high_watermark

    assert write_markers(unverified_client, producer_id, 0, 6, True, {topic: [0]}) == \
        {(topic, 0): E.TRANSACTION_COORDINATOR_FENCED}
    assert write_markers(unverified_client, producer_id, 0, 6, False, {topic: [0]}) == \
        {(topic, 0): E.TRANSACTION_COORDINATOR_FENCED}
    found, lso = read_committed(unverified_client, topic)
    assert (found, lso) == ([b"first"], lso_before)
    assert unverified_client.request(ApiKey.FETCH, 11, fetch_body(topic, 0, 0)).responses[0].partitions[0] \
        .high_watermark == end_before

    # The current coordinator's abort still goes through.
    assert write_markers(unverified_client, producer_id, 0, 7, False, {topic: [0]}) == {(topic, 0): E.NONE}
    found, lso = read_committed(unverified_client, topic)
    assert found == [b"first"] and lso == end_before + 1


def test_write_txn_markers_with_an_older_producer_epoch_is_refused(unverified_client):
    topic = f"markers-epoch-{uuid.uuid4().hex[:6]}"
    create_topic(unverified_client, topic)
    producer_id = unverified_client.request(ApiKey.INIT_PRODUCER_ID, 1, {
        "transactional_id": None, "transaction_timeout_ms": 0}).producer_id
    code, _ = produce_transactional(unverified_client, "direct", producer_id, 3, 0, [b"epoch-3"], topic=topic)
    assert code == E.NONE
    assert write_markers(unverified_client, producer_id, 2, 0, True, {topic: [0]}) == \
        {(topic, 0): E.INVALID_PRODUCER_EPOCH}
    assert read_committed(unverified_client, topic) == ([], 0)
    assert write_markers(unverified_client, producer_id, 3, 0, True, {topic: [0]}) == {(topic, 0): E.NONE}
    assert read_committed(unverified_client, topic)[0] == [b"epoch-3"]


def test_write_txn_markers_to_an_unknown_partition(client):
    errors = write_markers(client, 1, 0, 0, True, {"no-such-topic-markers": [0], TOPIC: [9]})
    assert errors == {("no-such-topic-markers", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                      (TOPIC, 9): E.UNKNOWN_TOPIC_OR_PARTITION}

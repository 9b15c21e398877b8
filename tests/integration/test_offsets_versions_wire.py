"""OffsetCommit v8-9, OffsetFetch v6-9 and OffsetForLeaderEpoch v4 over the
wire against a real broker, with Kafka's answers: several groups in one
OffsetFetch (v8+), require_stable (v7+) against a transactional commit
still open, GROUP_ID_NOT_FOUND for a member's commit to a missing group
(OffsetCommit v9), and the same offsets through every version."""
from __future__ import annotations

import time
import uuid

import pytest

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.integration.test_txn_wire import start_txn_broker
from tests.support.wire import WireClient

SETTINGS = {"group.initial.rebalance.delay.ms": "0", "transaction.state.log.num.partitions": "2",
            "offsets.topic.num.partitions": "2"}
WAIT_S = 10.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = start_txn_broker(tmp_path_factory.mktemp("offsets-versions"), {"t": 2}, SETTINGS)
    yield process
    process.kill()


@pytest.fixture
def client(broker):
    connection = WireClient(broker.port)
    yield connection
    connection.close()


def unique(prefix: str = "g") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def commit(client, group: str, offsets: dict[int, int], version: int, generation: int = -1,
           member_id: str = "") -> dict[int, int]:
    response = client.request(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "retention_time_ms": -1,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": index, "committed_offset": offset, "committed_leader_epoch": 3,
             "committed_metadata": f"m{offset}"} for index, offset in offsets.items()]}]})
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def rows(topics) -> list[tuple]:
    return [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata,
             p.error_code) for t in topics for p in t.partitions]


def test_one_commit_reads_the_same_through_every_offset_fetch_version(client):
    group = unique()
    assert commit(client, group, {0: 5, 1: 9}, version=9) == {0: E.NONE, 1: E.NONE}
    expected = [("t", 0, 5, 3, "m5", E.NONE), ("t", 1, 9, 3, "m9", E.NONE)]
    for version in range(1, 8):
        response = client.request(ApiKey.OFFSET_FETCH, version, {
            "group_id": group, "topics": [{"name": "t", "partition_indexes": [0, 1]}]})
        found = rows(response.topics)
        if version < 5:  # no leader epoch before v5
            found = [row[:3] + (3,) + row[4:] for row in found]
        assert found == expected, version
    for version in (8, 9):
        response = client.request(ApiKey.OFFSET_FETCH, version, {"groups": [
            {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0, 1]}]}]})
        (answer,) = response.groups
        assert (answer.group_id, answer.error_code, rows(answer.topics)) == (group, E.NONE, expected)


def test_offset_fetch_v8_answers_each_group_of_one_request(client):
    first, second, empty = unique(), unique(), unique()
    assert commit(client, first, {0: 1}, version=8) == {0: E.NONE}
    assert commit(client, second, {1: 2}, version=7) == {1: E.NONE}
    response = client.request(ApiKey.OFFSET_FETCH, 8, {"require_stable": False, "groups": [
        {"group_id": first, "topics": None},
        {"group_id": second, "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
        {"group_id": empty, "topics": None}]})
    answers = {group.group_id: (group.error_code, rows(group.topics)) for group in response.groups}
    assert answers == {
        first: (E.NONE, [("t", 0, 1, 3, "m1", E.NONE)]),
        second: (E.NONE, [("t", 0, -1, -1, "", E.NONE), ("t", 1, 2, 3, "m2", E.NONE)]),
        empty: (E.NONE, []),
    }


def test_a_members_commit_to_a_missing_group_is_group_id_not_found_from_v9(client):
    group = unique()
    assert commit(client, group, {0: 1}, version=8, generation=4, member_id="m") == {
        0: E.ILLEGAL_GENERATION}
    assert commit(client, group, {0: 1}, version=9, generation=4, member_id="m") == {
        0: E.GROUP_ID_NOT_FOUND}
    # An outsider's commit (generation -1) creates the group, at every version.
    assert commit(client, group, {0: 1}, version=9) == {0: E.NONE}


def test_require_stable_holds_back_a_partition_with_an_open_transactional_commit(client):
    group, transactional_id = unique(), unique("txn")
    assert commit(client, group, {0: 10, 1: 20}, version=8) == {0: E.NONE, 1: E.NONE}
    init = client.request(ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": transactional_id, "transaction_timeout_ms": 30_000,
        "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == E.NONE
    producer = {"transactional_id": transactional_id, "producer_id": init.producer_id,
                "producer_epoch": init.producer_epoch}
    assert client.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, {**producer, "group_id": group}).error_code == 0
    response = client.request(ApiKey.TXN_OFFSET_COMMIT, 3, {
        **producer, "group_id": group, "generation_id": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 11, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    assert response.topics[0].partitions[0].error_code == E.NONE

    def fetched(version: int, require_stable: bool) -> list[tuple]:
        if version >= 8:
            answer = client.request(ApiKey.OFFSET_FETCH, version, {
                "require_stable": require_stable, "groups": [{"group_id": group, "topics": None}]})
            return rows(answer.groups[0].topics)
        return rows(client.request(ApiKey.OFFSET_FETCH, version, {
            "require_stable": require_stable, "group_id": group, "topics": None}).topics)

    unstable = [("t", 0, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT), ("t", 1, 20, 3, "m20", E.NONE)]
    assert fetched(7, True) == fetched(9, True) == unstable
    assert fetched(7, False)[0] == ("t", 0, 10, 3, "m10", E.NONE)  # the last stable commit
    assert fetched(6, True)[0][2] == 10  # v6 cannot ask for stability
    assert client.request(ApiKey.END_TXN, 3, {**producer, "committed": True}).error_code == 0
    deadline = time.monotonic() + WAIT_S
    while fetched(9, True)[0][5] == E.UNSTABLE_OFFSET_COMMIT:
        assert time.monotonic() < deadline, "the transaction's offsets never became stable"
        time.sleep(0.05)
    assert fetched(9, True)[0] == ("t", 0, 11, -1, "", E.NONE)


def test_offset_for_leader_epoch_v4_is_flexible_and_answers_as_v3(client):
    answers = []
    for version in (3, 4):
        response = client.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, {
            "replica_id": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        (result,) = response.topics[0].partitions
        answers.append((result.error_code, result.leader_epoch, result.end_offset))
    assert answers[0] == answers[1] and answers[0][0] == E.NONE

"""OffsetCommit v10 and OffsetFetch v10 over the wire against a real
broker: topics named by id in the request and the answer, UNKNOWN_TOPIC_ID
for an id the broker does not know (nothing committed for it), the same
offsets read back by name at older versions, and a consumer-protocol
member's epoch checked at v10 as at v9 (KIP-848)."""
from __future__ import annotations

import uuid

import pytest

from kcore.metadata import NO_TOPIC_ID
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.wire import WireClient, create_topic

UNKNOWN = uuid.UUID("00000000-0000-0000-0000-00000000beef")


@pytest.fixture
def client(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "2"})
    connection = WireClient(broker.port)
    create_topic(connection, "t", partitions=2)
    yield connection
    connection.close()


def topic_id(client: WireClient, name: str) -> uuid.UUID:
    answer = client.request(ApiKey.METADATA, 12, {"topics": [{"name": name}],
                                                  "allow_auto_topic_creation": False})
    found = answer.topics[0].topic_id
    assert found != NO_TOPIC_ID
    return found


def commit_v10(client, group: str, topics: dict[uuid.UUID, dict[int, int]], member_id: str = "",
               epoch: int = -1) -> dict[tuple[uuid.UUID, int], int]:
    response = client.request(ApiKey.OFFSET_COMMIT, 10, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
        "group_instance_id": None,
        "topics": [{"topic_id": tid, "partitions": [
            {"partition_index": index, "committed_offset": offset, "committed_leader_epoch": 2,
             "committed_metadata": f"m{offset}"} for index, offset in offsets.items()]}
            for tid, offsets in topics.items()]})
    return {(t.topic_id, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch_v10(client, group: str, topics: dict[uuid.UUID, list[int]] | None, member_id: str | None = None,
              epoch: int = -1):
    response = client.request(ApiKey.OFFSET_FETCH, 10, {"require_stable": False, "groups": [{
        "group_id": group, "member_id": member_id, "member_epoch": epoch,
        "topics": None if topics is None else [
            {"topic_id": tid, "partition_indexes": indexes} for tid, indexes in topics.items()]}]})
    (answer,) = response.groups
    return answer.error_code, [(t.topic_id, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                p.metadata, p.error_code) for t in answer.topics for p in t.partitions]


def test_commit_and_fetch_by_topic_id_and_read_back_by_name(client):
    tid = topic_id(client, "t")
    assert commit_v10(client, "g-ids", {tid: {0: 5, 1: 9}}) == {(tid, 0): E.NONE, (tid, 1): E.NONE}
    assert fetch_v10(client, "g-ids", {tid: [0, 1]}) == (E.NONE, [
        (tid, 0, 5, 2, "m5", E.NONE), (tid, 1, 9, 2, "m9", E.NONE)])
    assert fetch_v10(client, "g-ids", None) == (E.NONE, [
        (tid, 0, 5, 2, "m5", E.NONE), (tid, 1, 9, 2, "m9", E.NONE)])
    by_name = client.request(ApiKey.OFFSET_FETCH, 9, {"groups": [
        {"group_id": "g-ids", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}]})
    assert [(t.name, p.partition_index, p.committed_offset) for t in by_name.groups[0].topics
            for p in t.partitions] == [("t", 0, 5), ("t", 1, 9)]


def test_an_unknown_topic_id_is_unknown_topic_id_and_commits_nothing(client):
    tid = topic_id(client, "t")
    answer = commit_v10(client, "g-unknown", {UNKNOWN: {0: 3}, tid: {0: 4, 7: 1}})
    assert answer == {(UNKNOWN, 0): E.UNKNOWN_TOPIC_ID, (tid, 0): E.NONE,
                      (tid, 7): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert fetch_v10(client, "g-unknown", {UNKNOWN: [0, 1], tid: [0]}) == (E.NONE, [
        (tid, 0, 4, 2, "m4", E.NONE),
        (UNKNOWN, 0, -1, -1, "", E.UNKNOWN_TOPIC_ID), (UNKNOWN, 1, -1, -1, "", E.UNKNOWN_TOPIC_ID)])
    assert fetch_v10(client, "g-unknown", None) == (E.NONE, [(tid, 0, 4, 2, "m4", E.NONE)])


def test_a_consumer_protocol_members_epoch_is_checked_at_v10(client):
    tid = topic_id(client, "t")
    joined = client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "g-848", "member_id": "m1", "member_epoch": 0, "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["t"], "topic_partitions": []})
    assert joined.error_code == E.NONE and joined.member_epoch >= 1
    epoch = joined.member_epoch
    assert commit_v10(client, "g-848", {tid: {0: 6}}, "m1", epoch) == {(tid, 0): E.NONE}
    assert commit_v10(client, "g-848", {tid: {0: 7}}, "m1", epoch + 1) == {(tid, 0): E.STALE_MEMBER_EPOCH}
    assert commit_v10(client, "g-848", {tid: {0: 7}}, "nobody", epoch) == {(tid, 0): E.UNKNOWN_MEMBER_ID}
    assert fetch_v10(client, "g-848", {tid: [0]}, "m1", epoch) == (E.NONE, [(tid, 0, 6, 2, "m6", E.NONE)])
    assert fetch_v10(client, "g-848", {tid: [0]}, "m1", epoch + 1) == (E.STALE_MEMBER_EPOCH, [])
    assert fetch_v10(client, "g-848", {tid: [0]}, "nobody", epoch) == (E.UNKNOWN_MEMBER_ID, [])

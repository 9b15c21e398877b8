"""Group APIs over the wire with exact requests: Kafka's error codes for bad
requests (wrong generation, unknown member, commits during a rebalance,
oversized metadata, ...), every served version of each group API, and the
__consumer_offsets records themselves."""
from __future__ import annotations

import struct
import threading
import time
import uuid

import pytest

from kcore.coordinator.group import records as offsets_records
from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support import BrokerProcess
from tests.support.wire import WireClient, fetch_body

GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "100"}
SUB = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("groups-wire") / "data", GROUP_SETTINGS).start()
    client = WireClient(process.port)
    create_topic(client, "t", 3)
    client.close()
    yield process
    process.kill()


@pytest.fixture
def client(broker):
    connection = WireClient(broker.port)
    yield connection
    connection.close()


def unique(prefix: str = "g") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(client, name, partitions):
    response = client.request(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert response.topics[0].error_code == E.NONE


def join(client, group, member_id="", version=5, instance=None, session=10_000, protocols=None,
         protocol_type="consumer"):
    return client.request(ApiKey.JOIN_GROUP, version, {
        "group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": 5000,
        "member_id": member_id, "group_instance_id": instance, "protocol_type": protocol_type,
        "protocols": protocols if protocols is not None else [{"name": "range", "metadata": SUB}]})


def sync(client, group, generation, member_id, assignments=(), version=3):
    return client.request(ApiKey.SYNC_GROUP, version, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "group_instance_id": None,
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]})


def heartbeat(client, group, generation, member_id, version=3):
    return client.request(ApiKey.HEARTBEAT, version, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "group_instance_id": None}).error_code


def commit(client, group, generation, member_id, offsets, version=7, retention=-1):
    topics: dict[str, list] = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                             "committed_leader_epoch": -1,
                                             "committed_metadata": metadata})
    response = client.request(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "retention_time_ms": retention,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()]})
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch_offsets(client, group, partitions, version=5):
    topics = None
    if partitions is not None:
        grouped: dict[str, list] = {}
        for topic, partition in partitions:
            grouped.setdefault(topic, []).append(partition)
        topics = [{"name": t, "partition_indexes": p} for t, p in grouped.items()]
    return client.request(ApiKey.OFFSET_FETCH, version, {"group_id": group, "topics": topics})


def join_with_id(client, group, **kwargs):
    """JoinGroup, answering MEMBER_ID_REQUIRED with the id it hands out."""
    first = join(client, group, **kwargs)
    if first.error_code != E.MEMBER_ID_REQUIRED:
        return first
    return join(client, group, **{**kwargs, "member_id": first.member_id})


def joined_member(client, group, **kwargs):
    """Join alone (MEMBER_ID_REQUIRED round trip included) and sync; returns
    (member_id, generation)."""
    first = join_with_id(client, group, **kwargs)
    assert first.error_code == E.NONE
    assert sync(client, group, first.generation_id, first.member_id,
                [(first.member_id, b"mine")]).error_code == E.NONE
    return first.member_id, first.generation_id


def wait_for_rebalance(client, group, generation, member_id, attempts=200):
    for _ in range(attempts):
        if heartbeat(client, group, generation, member_id) == E.REBALANCE_IN_PROGRESS:
            return
        time.sleep(0.01)
    raise AssertionError(f"group {group} did not start rebalancing")


def in_thread(function, *args, **kwargs):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", function(*args, **kwargs)))
    thread.start()
    return thread, box


def test_find_coordinator_names_this_broker_and_creates_consumer_offsets(broker, client):
    for version in (0, 1, 2):
        response = client.request(ApiKey.FIND_COORDINATOR, version, {"key": unique(), "key_type": 0})
        assert (response.error_code, response.node_id, response.port) == (E.NONE, 0, broker.port)
        assert response.host == "127.0.0.1"
    bad = client.request(ApiKey.FIND_COORDINATOR, 1, {"key": "x", "key_type": 9})
    assert bad.error_code == E.INVALID_REQUEST and bad.error_message
    metadata = client.request(ApiKey.METADATA, 8, {"topics": [{"name": "__consumer_offsets"}],
                                                   "allow_auto_topic_creation": False})
    topic = metadata.topics[0]
    assert topic.error_code == E.NONE and topic.is_internal and len(topic.partitions) == 50
    configs = client.request(ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 2, "resource_name": "__consumer_offsets",
                       "configuration_keys": ["cleanup.policy"]}], "include_synonyms": False})
    assert [(c.name, c.value) for c in configs.results[0].configs] == [("cleanup.policy", "compact")]


def test_join_v4_asks_for_member_id_and_v5_static_does_not(client):
    group = unique()
    first = join(client, group, version=4)
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id.startswith("kcore-tests-")
    assert first.generation_id == -1
    second = join(client, group, member_id=first.member_id, version=4)
    assert second.error_code == E.NONE and second.leader == first.member_id
    assert [m.member_id for m in second.members] == [first.member_id]
    static = join(client, unique(), version=5, instance="i-1")
    assert static.error_code == E.NONE and static.member_id.startswith("i-1-")
    assert [(m.member_id, m.group_instance_id) for m in static.members] == [(static.member_id, "i-1")]
    old = join(client, unique(), version=0)
    assert old.error_code == E.NONE and old.generation_id == 1


def test_bad_joins_get_kafkas_codes(client):
    assert join(client, unique(), session=50).error_code == E.INVALID_SESSION_TIMEOUT
    assert join(client, unique(), session=1_800_001).error_code == E.INVALID_SESSION_TIMEOUT
    assert join(client, "", version=5).error_code == E.INVALID_GROUP_ID
    assert join(client, unique(), member_id="never-joined").error_code == E.UNKNOWN_MEMBER_ID
    group = unique()
    joined_member(client, group)
    other = join(client, group, protocols=[{"name": "roundrobin", "metadata": SUB}])
    assert other.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert join(client, unique(), protocols=[]).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_wrong_generation_and_unknown_member(client):
    group = unique()
    member_id, generation = joined_member(client, group)
    assert heartbeat(client, group, generation + 1, member_id) == E.ILLEGAL_GENERATION
    assert heartbeat(client, group, generation, "ghost") == E.UNKNOWN_MEMBER_ID
    assert heartbeat(client, unique(), 1, "ghost", version=0) == E.UNKNOWN_MEMBER_ID
    assert sync(client, group, generation + 1, member_id).error_code == E.ILLEGAL_GENERATION
    assert sync(client, group, generation, "ghost", version=0).error_code == E.UNKNOWN_MEMBER_ID
    assert commit(client, group, generation + 1, member_id, {("t", 0): (1, "")}) == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert commit(client, group, generation, "ghost", {("t", 0): (1, "")}) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID}
    assert commit(client, unique(), 3, "ghost", {("t", 0): (1, "")}, version=2) == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert heartbeat(client, group, generation, member_id, version=0) == E.NONE
    assert sync(client, group, generation, member_id, version=0).assignment == b"mine"


def test_commits_during_a_rebalance(broker, client):
    group = unique()
    leader_id, generation = joined_member(client, group)
    second = WireClient(broker.port)
    try:
        thread, box = in_thread(join_with_id, second, group)
        wait_for_rebalance(client, group, generation, leader_id)
        # PreparingRebalance: the old generation still commits what it read.
        assert commit(client, group, generation, leader_id, {("t", 0): (5, "")}) == {("t", 0): E.NONE}
        rejoin = join(client, group, member_id=leader_id)
        thread.join(10)
        assert rejoin.generation_id == box["result"].generation_id == generation + 1
        # CompletingRebalance: members of the new generation have no assignment yet.
        assert commit(client, group, generation + 1, leader_id, {("t", 0): (6, "")}) == {
            ("t", 0): E.REBALANCE_IN_PROGRESS}
        assert commit(client, group, generation, leader_id, {("t", 0): (6, "")}) == {
            ("t", 0): E.ILLEGAL_GENERATION}
        assert heartbeat(client, group, generation + 1, leader_id) == E.NONE
    finally:
        second.close()


def test_commit_metadata_limits_and_unknown_partitions(client):
    group = unique()
    result = commit(client, group, -1, "", {("t", 0): (1, "x" * 4097), ("t", 1): (2, "ok"),
                                           ("missing", 0): (3, ""), ("t", 99): (4, "")})
    assert result == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE,
                      ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                      ("t", 99): E.UNKNOWN_TOPIC_OR_PARTITION}
    fetched = fetch_offsets(client, group, [("t", 0), ("t", 1)])
    rows = [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in fetched.topics[0].partitions]
    assert rows == [(0, -1, "", E.NONE), (1, 2, "ok", E.NONE)]


def test_offset_fetch_null_topics_returns_every_committed_partition(client):
    group = unique()
    assert set(commit(client, group, -1, "", {("t", 2): (7, "a"), ("t", 0): (3, "b")},
                      version=2).values()) == {E.NONE}
    for version in (2, 5):
        response = fetch_offsets(client, group, None, version=version)
        assert response.error_code == E.NONE
        assert [(t.name, p.partition_index, p.committed_offset, p.metadata)
                for t in response.topics for p in t.partitions] == [("t", 0, 3, "b"), ("t", 2, 7, "a")]
    v1 = fetch_offsets(client, group, [("t", 2)], version=1)
    assert v1.topics[0].partitions[0].committed_offset == 7


def test_leave_group_single_and_batch(broker, client):
    group = unique()
    member_id, _ = joined_member(client, group)
    assert client.request(ApiKey.LEAVE_GROUP, 1, {"group_id": group, "member_id": "ghost"}).error_code \
        == E.UNKNOWN_MEMBER_ID
    assert client.request(ApiKey.LEAVE_GROUP, 0, {"group_id": group, "member_id": member_id}).error_code \
        == E.NONE
    static_group = unique()
    a = join(client, static_group, instance="a")
    other = WireClient(broker.port)
    try:
        thread, box = in_thread(join, other, static_group, instance="b")
        wait_for_rebalance(client, static_group, a.generation_id, a.member_id)
        rejoin = join(client, static_group, member_id=a.member_id, instance="a")
        thread.join(10)
        b = box["result"]
        assert rejoin.generation_id == b.generation_id
    finally:
        other.close()
    response = client.request(ApiKey.LEAVE_GROUP, 3, {"group_id": static_group, "members": [
        {"member_id": a.member_id, "group_instance_id": "a"}, {"member_id": "", "group_instance_id": "b"},
        {"member_id": "ghost", "group_instance_id": None}]})
    assert response.error_code == E.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        (a.member_id, "a", E.NONE), ("", "b", E.NONE), ("ghost", None, E.UNKNOWN_MEMBER_ID)]
    described = client.request(ApiKey.DESCRIBE_GROUPS, 4, {"groups": [static_group],
                                                          "include_authorized_operations": False})
    assert described.groups[0].group_state == "Empty" and described.groups[0].members == []


def test_describe_list_delete_groups_and_offset_delete(client):
    group, idle = unique(), unique("idle")
    member_id, _ = joined_member(client, group, instance="inst")
    commit(client, idle, -1, "", {("t", 0): (1, "")})
    for version in (0, 4):
        described = client.request(ApiKey.DESCRIBE_GROUPS, version, {
            "groups": [group, unique("none")], "include_authorized_operations": False})
        live, dead = described.groups
        assert (live.group_state, live.protocol_type, live.protocol_data) == ("Stable", "consumer", "range")
        member = live.members[0]
        assert (member.member_id, member.member_metadata, member.member_assignment) == (
            member_id, SUB, b"mine")
        assert member.client_id == "kcore-tests" and member.client_host == "/127.0.0.1"
        assert member.group_instance_id == ("inst" if version >= 4 else None)
        assert (dead.error_code, dead.group_state, dead.members) == (E.NONE, "Dead", [])
    listed = client.request(ApiKey.LIST_GROUPS, 2, {})
    assert {(g.group_id, g.protocol_type) for g in listed.groups} >= {(group, "consumer"), (idle, "")}
    commit(client, group, 1, member_id, {("t", 1): (4, "")})
    deleted = client.request(ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": "t", "partitions": [{"partition_index": 1}]},
        {"name": "missing", "partitions": [{"partition_index": 0}]}]})
    assert [(t.name, p.error_code) for t in deleted.topics for p in t.partitions] == [
        ("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("missing", E.UNKNOWN_TOPIC_OR_PARTITION)]
    response = client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group, idle, unique("none")]})
    assert [r.error_code for r in response.results] == [E.NON_EMPTY_GROUP, E.NONE, E.GROUP_ID_NOT_FOUND]
    assert fetch_offsets(client, idle, [("t", 0)]).topics[0].partitions[0].committed_offset == -1


def test_records_in_consumer_offsets_use_kafkas_schemas(client):
    group = unique()
    member_id, generation = joined_member(client, group)
    commit(client, group, generation, member_id, {("t", 0): (11, "meta")}, version=7)
    commit(client, group, generation, member_id, {("t", 1): (12, "")}, version=2, retention=60_000)
    partition = offsets_records.partition_for(group, 50)
    data = client.request(ApiKey.FETCH, 11, fetch_body("__consumer_offsets", partition, 0))
    records = [r for r in record_codec.iter_records(bytes(data.responses[0].partitions[0].records))
               if group.encode() in r.key]
    keys = [offsets_records.decode_key(r.key) for r in records]
    assert keys == [offsets_records.GroupKey(group), offsets_records.OffsetKey(group, "t", 0),
                    offsets_records.OffsetKey(group, "t", 1)]
    assert [r.key[:2] for r in records] == [b"\x00\x02", b"\x00\x01", b"\x00\x01"]
    assert [r.value[:2] for r in records] == [b"\x00\x03", b"\x00\x03", b"\x00\x01"]
    group_value = offsets_records.decode_group_value(records[0].value)
    assert (group_value.protocol_type, group_value.generation, group_value.protocol,
            group_value.leader) == ("consumer", generation, "range", member_id)
    assert [(m.member_id, m.client_id, m.subscription, m.assignment) for m in group_value.members] == [
        (member_id, "kcore-tests", SUB, b"mine")]
    first = offsets_records.decode_offset_value(records[1].value)
    assert (first.offset, first.metadata, first.expire_timestamp) == (11, "meta", -1)
    second = offsets_records.decode_offset_value(records[2].value)
    assert second.offset == 12 and second.expire_timestamp - second.commit_timestamp == 60_000


def test_member_metadata_too_large_for_the_log_fails_sync(broker_factory):
    process = broker_factory({**GROUP_SETTINGS, "message.max.bytes": "20000"})
    client = WireClient(process.port)
    try:
        group = unique()
        big = [{"name": "range", "metadata": SUB + b"\0" * 30_000}]
        first = join_with_id(client, group, protocols=big)
        assert first.error_code == E.NONE
        result = sync(client, group, first.generation_id, first.member_id, [(first.member_id, b"a")])
        assert result.error_code == E.UNKNOWN_SERVER_ERROR
        assert heartbeat(client, group, first.generation_id, first.member_id) == E.REBALANCE_IN_PROGRESS
    finally:
        client.close()


@pytest.mark.parametrize("clean", [True, False], ids=["clean-stop", "sigkill"])
def test_committed_offsets_and_groups_survive_broker_restart(broker_factory, clean):
    process = broker_factory(GROUP_SETTINGS)
    client = WireClient(process.port)
    create_topic(client, "t", 2)
    group = unique()
    member_id, generation = joined_member(client, group, session=30_000)
    assert commit(client, group, generation, member_id, {("t", 0): (123, "m"), ("t", 1): (45, "")}) == {
        ("t", 0): E.NONE, ("t", 1): E.NONE}
    client.close()
    process.restart(clean=clean)
    client = WireClient(process.port)
    try:
        fetched = fetch_offsets(client, group, [("t", 0), ("t", 1)])
        assert [(p.committed_offset, p.metadata) for p in fetched.topics[0].partitions] == [
            (123, "m"), (45, "")]
        assert heartbeat(client, group, generation, member_id) == E.NONE
        assert sync(client, group, generation, member_id).assignment == b"mine"
    finally:
        client.close()


def test_deleting_a_topic_drops_its_committed_offsets(broker):
    from kcore.protocol.api_keys import ApiKey
    from tests.support.wire import WireClient
    client = WireClient(broker.port)
    created = client.request(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": "gone", "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert created.topics[0].error_code == 0

    def commit_and_fetch(commit: bool):
        if commit:
            response = client.request(ApiKey.OFFSET_COMMIT, 2, {
                "group_id": "g-gone", "generation_id_or_member_epoch": -1, "member_id": "",
                "retention_time_ms": -1,
                "topics": [{"name": "gone", "partitions": [{"partition_index": 0,
                                                            "committed_offset": 5,
                                                            "committed_metadata": ""}]}]})
            assert response.topics[0].partitions[0].error_code == 0
        fetched = client.request(ApiKey.OFFSET_FETCH, 3, {
            "group_id": "g-gone", "topics": [{"name": "gone", "partition_indexes": [0]}]})
        return fetched.topics[0].partitions[0].committed_offset

    assert commit_and_fetch(True) == 5
    deleted = client.request(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["gone"], "timeout_ms": 5000})
    assert deleted.responses[0].error_code == 0
    assert commit_and_fetch(False) == -1
    client.close()

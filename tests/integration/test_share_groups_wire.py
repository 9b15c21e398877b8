"""Share groups over the wire (KIP-932): the answers to bad input are
Kafka's errors and change nothing: an acknowledgement of a record not
acquired (or acquired by another member), an unknown member, a stale
member epoch, a share session that does not exist or a wrong session
epoch. Frames are sent with kcore's WireClient at the versions Kafka 4.2
serves."""
from __future__ import annotations

import time
import uuid

import pytest

from kcore.protocol import ApiKey, ErrorCode
from kcore.testing.wire import WireClient, batch, create_topic, produce, topic_id_of

ACCEPT, RELEASE = 1, 2
RECORD_LIMIT = 1
GROUP = "wire-share"


@pytest.fixture
def wire(broker):
    client = WireClient(broker.port)
    yield client
    client.close()


def _heartbeat(wire: WireClient, member: str, epoch: int, topics: list[str] | None):
    return wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
        "group_id": GROUP, "member_id": member, "member_epoch": epoch, "rack_id": None,
        "subscribed_topic_names": topics})


def _share_fetch(wire: WireClient, member: str, epoch: int, topic_id: uuid.UUID, acks=(), max_records=100,
                 max_wait_ms=0, record_limit=False):
    """ShareFetch v1 (batch-optimized: whole batches, past max_records), or
    v2 in the record-limit acquire mode (KIP-1206: max_records is exact)."""
    version, mode = (2, {"share_acquire_mode": RECORD_LIMIT, "is_renew_ack": False}) if record_limit else (1, {})
    return wire.request(ApiKey.SHARE_FETCH, version, {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
        "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": max_records, **mode,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}
            for first, last, kind in acks]}]}],
        "forgotten_topics_data": []})


def _acknowledge(wire: WireClient, member: str, epoch: int, topic_id: uuid.UUID, acks):
    return wire.request(ApiKey.SHARE_ACKNOWLEDGE, 1, {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}
            for first, last, kind in acks]}]}]})


def _set_earliest(wire: WireClient) -> None:
    response = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [{
        "resource_type": 32, "resource_name": GROUP, "configs": [
            {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
        "validate_only": False})
    assert response.responses[0].error_code == ErrorCode.NONE


def _acquired(response) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for topic in response.responses for partition in topic.partitions
            for r in partition.acquired_records]


def _partition(response):
    return response.responses[0].partitions[0]


def _prepare(wire: WireClient, topic: str, count: int) -> uuid.UUID:
    create_topic(wire, topic)
    produce(wire, topic, batch([b"v%d" % i for i in range(count)]))
    _set_earliest(wire)
    return topic_id_of(wire, topic)


def test_acknowledging_a_record_not_acquired_is_invalid_record_state_and_changes_nothing(wire):
    topic_id = _prepare(wire, "share-wire-1", 10)
    first = _share_fetch(wire, "member-a", 0, topic_id, max_records=5, record_limit=True)
    assert first.error_code == ErrorCode.NONE
    assert _acquired(first) == [(0, 4, 1)]
    # Offsets 3-7: 5-7 were never acquired: the whole batch is refused.
    refused = _acknowledge(wire, "member-a", 1, topic_id, [(3, 7, ACCEPT)])
    assert refused.error_code == ErrorCode.NONE
    assert _partition(refused).error_code == ErrorCode.INVALID_RECORD_STATE
    # Another member may not acknowledge member-a's records either.
    other = _share_fetch(wire, "member-b", 0, topic_id, max_records=5, record_limit=True)
    assert _acquired(other) == [(5, 9, 1)], "member-b gets only what member-a does not hold"
    stolen = _acknowledge(wire, "member-b", 1, topic_id, [(0, 4, ACCEPT)])
    assert _partition(stolen).error_code == ErrorCode.INVALID_RECORD_STATE
    # Nothing changed: member-a can still accept 0-4, once.
    accepted = _acknowledge(wire, "member-a", 2, topic_id, [(0, 4, ACCEPT)])
    assert _partition(accepted).error_code == ErrorCode.NONE
    again = _acknowledge(wire, "member-a", 3, topic_id, [(0, 4, ACCEPT)])
    assert _partition(again).error_code == ErrorCode.INVALID_RECORD_STATE


def test_the_batch_optimized_mode_acquires_a_started_batch_whole(wire):
    """Kafka exceeds max_records to end on a batch boundary (v1, and v2's
    acquire mode 0): the whole batch goes to the client anyway."""
    topic_id = _prepare(wire, "share-wire-5", 10)
    first = _share_fetch(wire, "member-d", 0, topic_id, max_records=5)
    assert _acquired(first) == [(0, 9, 1)]
    assert _acquired(_share_fetch(wire, "member-e", 0, topic_id, max_records=5)) == [], \
        "every record is held by member-d"


def test_share_sessions_refuse_unknown_sessions_wrong_epochs_and_acks_on_open(wire):
    topic_id = _prepare(wire, "share-wire-2", 4)
    assert _acknowledge(wire, "nobody", 1, topic_id, []).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert _share_fetch(wire, "nobody", 3, topic_id).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert _share_fetch(wire, "member-c", 0, topic_id, acks=[(0, 0, ACCEPT)]).error_code == \
        ErrorCode.INVALID_REQUEST
    opened = _share_fetch(wire, "member-c", 0, topic_id)
    assert _acquired(opened) == [(0, 3, 1)]
    assert _share_fetch(wire, "member-c", 5, topic_id).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # The session is intact: epoch 1 releases 0-3, which come back with delivery count 2.
    released = _share_fetch(wire, "member-c", 1, topic_id, acks=[(0, 3, RELEASE)])
    assert _partition(released).acknowledge_error_code == ErrorCode.NONE
    assert _acquired(released) == [(0, 3, 2)]


def _find_coordinator(wire: WireClient) -> None:
    """The group's coordinator is ready (the first lookup creates __consumer_offsets)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = wire.request(ApiKey.FIND_COORDINATOR, 1, {"key": GROUP, "key_type": 0})
        if found.error_code == ErrorCode.NONE and _heartbeat(wire, "probe", -1, None).error_code \
                == ErrorCode.UNKNOWN_MEMBER_ID:
            return
        time.sleep(0.1)
    raise AssertionError("no coordinator")


def test_heartbeats_of_unknown_members_and_stale_epochs_get_kafkas_errors(wire):
    create_topic(wire, "share-wire-3")
    _find_coordinator(wire)
    assert _heartbeat(wire, "ghost", 3, None).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert _heartbeat(wire, "", 0, ["share-wire-3"]).error_code == ErrorCode.INVALID_REQUEST
    assert _heartbeat(wire, "m1", 0, None).error_code == ErrorCode.INVALID_REQUEST
    joined = _heartbeat(wire, "m1", 0, ["share-wire-3"])
    assert joined.error_code == ErrorCode.NONE and joined.member_epoch >= 1
    assert [tp.topic_id for tp in joined.assignment.topic_partitions] == [topic_id_of(wire, "share-wire-3")]
    stale = _heartbeat(wire, "m1", joined.member_epoch + 7, None)
    assert stale.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    still = _heartbeat(wire, "m1", joined.member_epoch, None)
    assert still.error_code == ErrorCode.NONE, "a refused heartbeat changed nothing"
    left = _heartbeat(wire, "m1", -1, None)
    assert left.error_code == ErrorCode.NONE and left.member_epoch == -1
    assert _heartbeat(wire, "m1", joined.member_epoch, None).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_lock_that_expires_makes_the_records_available_again(broker_factory):
    broker = broker_factory({"group.share.record.lock.duration.ms": "1000"})
    wire = WireClient(broker.port)
    try:
        topic_id = _prepare(wire, "share-wire-4", 3)
        assert _acquired(_share_fetch(wire, "holder", 0, topic_id)) == [(0, 2, 1)]
        assert _acquired(_share_fetch(wire, "waiter", 0, topic_id)) == []
        time.sleep(1.5)
        assert _acquired(_share_fetch(wire, "waiter", 1, topic_id, max_wait_ms=2000)) == [(0, 2, 2)]
    finally:
        wire.close()


def test_a_share_group_is_listed_described_and_deleted_beside_a_classic_group(wire):
    """ListGroups v5 gives a share group's type ("share") and filters by it;
    DescribeGroups v6 answers it as Kafka 4 does for any group that is not
    classic; DeleteGroups refuses it while a member is in it."""
    create_topic(wire, "share-wire-6")
    _find_coordinator(wire)
    classic = "wire-classic"
    committed = wire.request(ApiKey.OFFSET_COMMIT, 2, {
        "group_id": classic, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": "share-wire-6", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
    joined = _heartbeat(wire, "m6", 0, ["share-wire-6"])
    assert joined.error_code == ErrorCode.NONE
    listed = wire.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    kinds = {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in listed.groups}
    assert kinds[GROUP] == ("share", "Stable", "share")
    assert kinds[classic] == ("", "Empty", "classic")
    only_share = wire.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["Share"]})
    assert [g.group_id for g in only_share.groups] == [GROUP]
    described = wire.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": [GROUP], "include_authorized_operations": False})
    assert described.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert described.groups[0].error_message == f"Group {GROUP} is not a classic group."
    refused = wire.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [GROUP]})
    assert refused.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert _heartbeat(wire, "m6", -1, None).error_code == ErrorCode.NONE
    deleted = wire.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [GROUP, classic]})
    assert [r.error_code for r in deleted.results] == [ErrorCode.NONE, ErrorCode.NONE]
    left = wire.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    assert not {GROUP, classic} & {g.group_id for g in left.groups}

"""One group id, one kind of group, over the wire as Kafka answers it:
JoinGroup naming a share group gets INCONSISTENT_GROUP_PROTOCOL with an
empty member id, ConsumerGroupHeartbeat naming one GROUP_ID_NOT_FOUND
("not a consumer group"), and ShareGroupHeartbeat naming a classic group
with members or a consumer-protocol group GROUP_ID_NOT_FOUND ("not a share
group"). Each refusal leaves the group that holds the id as it was."""
from __future__ import annotations

import time

import pytest

from kcore.protocol import ApiKey, ErrorCode
from kcore.testing.wire import WireClient, create_topic

TOPIC = "kinds"


@pytest.fixture
def wire(broker):
    client = WireClient(broker.port)
    create_topic(client, TOPIC)
    yield client
    client.close()


def _share_heartbeat(wire: WireClient, group: str, member: str, epoch: int, topics: list[str] | None):
    return wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
        "subscribed_topic_names": topics})


def _consumer_heartbeat(wire: WireClient, group: str, member: str):
    return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member, "member_epoch": 0, "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": [TOPIC], "topic_partitions": []})


def _join(wire: WireClient, group: str):
    """JoinGroup v3: no member id round trip, so the first member joins at once."""
    return wire.request(ApiKey.JOIN_GROUP, 3, {
        "group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 5000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})


def _wait_for_coordinator(wire: WireClient, group: str) -> None:
    """The first lookup creates __consumer_offsets; its partitions load in the background."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = wire.request(ApiKey.FIND_COORDINATOR, 1, {"key": group, "key_type": 0})
        if found.error_code == ErrorCode.NONE and _share_heartbeat(
                wire, group, "probe", -1, None).error_code == ErrorCode.UNKNOWN_MEMBER_ID:
            return
        time.sleep(0.1)
    raise AssertionError("no group coordinator within 30 s")


def test_a_share_groups_id_is_refused_to_classic_and_consumer_members(wire):
    group = "kinds-share"
    _wait_for_coordinator(wire, group)
    joined = _share_heartbeat(wire, group, "s1", 0, [TOPIC])
    assert joined.error_code == ErrorCode.NONE and joined.member_epoch >= 1

    classic = _join(wire, group)
    assert classic.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert classic.member_id == ""
    consumer = _consumer_heartbeat(wire, group, "c1")
    assert consumer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert consumer.error_message == f"Group {group} is not a consumer group."

    still = _share_heartbeat(wire, group, "s1", joined.member_epoch, None)
    assert still.error_code == ErrorCode.NONE and still.member_epoch == joined.member_epoch
    listed = wire.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    assert [g.group_type for g in listed.groups if g.group_id == group] == ["share"]
    # After the last share member leaves the group is empty but still a share group.
    assert _share_heartbeat(wire, group, "s1", -1, None).error_code == ErrorCode.NONE
    assert _join(wire, group).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_classic_and_consumer_groups_ids_are_refused_to_share_members(wire):
    classic_group, consumer_group = "kinds-classic", "kinds-consumer"
    _wait_for_coordinator(wire, classic_group)
    _wait_for_coordinator(wire, consumer_group)
    classic = _join(wire, classic_group)
    assert classic.error_code == ErrorCode.NONE and classic.member_id
    consumer = _consumer_heartbeat(wire, consumer_group, "c1")
    assert consumer.error_code == ErrorCode.NONE and consumer.member_epoch >= 1

    for group in (classic_group, consumer_group):
        refused = _share_heartbeat(wire, group, "s1", 0, [TOPIC])
        assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND, group
        assert refused.error_message == f"Group {group} is not a share group."

    described = wire.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [classic_group],
                                                         "include_authorized_operations": False})
    assert [m.member_id for m in described.groups[0].members] == [classic.member_id]
    listed = wire.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    kinds = {g.group_id: g.group_type for g in listed.groups}
    assert kinds[classic_group] == "classic" and kinds[consumer_group] == "consumer"

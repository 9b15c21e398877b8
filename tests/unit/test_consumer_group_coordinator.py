"""Consumer-protocol groups (KIP-848) on a real coordinator and log:
membership, revoke-before-assign, Kafka's errors for bad heartbeats (and
nothing changed by them), offsets with member epochs, regexes and replay."""
from __future__ import annotations

import pytest

from kcore.coordinator.group.consumer_coordinator import HeartbeatRequest
from kcore.coordinator.group.manager import OFFSETS_TOPIC
from kcore.coordinator.group.records import OffsetValue
from kcore.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import run


def hb(coordinator, member_id, epoch, topics=("t",), owned=None, group="cg", **fields):
    """One heartbeat; a join (epoch 0) sends the full request."""
    if epoch == 0:
        fields.setdefault("rebalance_timeout_ms", 30_000)
        fields.setdefault("subscribed_topic_names", list(topics))
        owned = [] if owned is None else owned
    return coordinator.consumer_group_heartbeat(
        HeartbeatRequest(group, member_id, epoch, owned=owned, client_id="c", client_host="/127.0.0.1",
                         **fields))


def owned_of(result) -> list:
    return [(topic_id, sorted(parts)) for topic_id, parts in (result.assignment or {}).items()]


def count(result) -> int:
    return sum(len(p) for p in (result.assignment or {}).values())


def log_end(node, coordinator, group="cg") -> int:
    index = coordinator.manager.partition_for(group)
    return node.replica_manager.get(OFFSETS_TOPIC, index).log_end_offset


def test_members_join_and_the_second_gets_its_half_only_after_the_first_revoked(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 4)
        a = await hb(coordinator, "a", 0)
        assert (a.error_code, a.member_epoch, count(a)) == (E.NONE, 1, 4)
        b = await hb(coordinator, "b", 0)
        # b's partitions are still a's: b reaches epoch 2 with nothing yet.
        assert (b.error_code, b.member_epoch, count(b)) == (E.NONE, 2, 0)
        a2 = await hb(coordinator, "a", 1, owned=owned_of(a))
        assert (a2.member_epoch, count(a2)) == (1, 2)      # keep two, revoke two, same epoch
        a3 = await hb(coordinator, "a", 1, owned=owned_of(a2))
        assert (a3.member_epoch, a3.assignment) == (2, None)  # revoked: epoch 2, no change
        b2 = await hb(coordinator, "b", 2, owned=[])
        assert count(b2) == 2
        mine, theirs = set(owned_of(a2)[0][1]), set(owned_of(b2)[0][1])
        assert not mine & theirs and len(mine | theirs) == 4
        group = coordinator.consumer_groups["cg"]
        assert group.state.kafka_name == "Stable" and group.group_epoch == 2
    run(tmp_path, scenario)


@pytest.mark.parametrize("request_fields,error", [
    ({"member_id": "", "member_epoch": 0}, E.INVALID_REQUEST),                   # v1 needs the id
    ({"member_epoch": 0, "rebalance_timeout_ms": -1}, E.INVALID_REQUEST),
    ({"member_epoch": 0, "subscribed_topic_names": []}, E.INVALID_REQUEST),
    ({"member_epoch": -3}, E.INVALID_REQUEST),
    ({"member_epoch": 0, "server_assignor": "sticky"}, E.UNSUPPORTED_ASSIGNOR),
    ({"member_epoch": 0, "subscribed_topic_regex": "t(", "subscribed_topic_names": None},
     E.INVALID_REGULAR_EXPRESSION),
    ({"member_epoch": 3}, E.UNKNOWN_MEMBER_ID),                                  # never joined
    ({"member_id": "a", "member_epoch": 7}, E.FENCED_MEMBER_EPOCH),              # ahead
    ({"member_id": "a", "member_epoch": 0, "instance_id": "i1", "member_id_override": "x"},
     E.UNRELEASED_INSTANCE_ID),                                                  # instance in use
    ({"member_id": "a", "member_epoch": 1, "instance_id": "i1", "member_id_override": "x"},
     E.FENCED_INSTANCE_ID),
    ({"group_id": "", "member_epoch": 0}, E.INVALID_GROUP_ID),
])
def test_bad_heartbeats_get_kafkas_error_and_change_nothing(tmp_path, request_fields, error):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        first = await hb(coordinator, "a", 0, instance_id="i1")
        assert first.error_code == E.NONE
        before = log_end(node, coordinator)
        group = coordinator.consumer_groups["cg"]
        state = (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target))
        fields = {"rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["t"], "owned": []}
        fields.update({k: v for k, v in request_fields.items() if k != "member_id_override"})
        member_id = request_fields.get("member_id_override", fields.pop("member_id", "z"))
        fields.pop("member_id", None)
        result = await coordinator.consumer_group_heartbeat(HeartbeatRequest(
            fields.pop("group_id", "cg"), member_id, fields.pop("member_epoch"), **fields))
        assert result.error_code == error
        assert log_end(node, coordinator) == before
        assert (group.group_epoch, group.assignment_epoch, group.members, group.target) == state
    run(tmp_path, scenario)


def test_a_full_group_refuses_a_new_member(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        assert (await hb(coordinator, "a", 0)).error_code == E.NONE
        before = log_end(node, coordinator)
        assert (await hb(coordinator, "b", 0)).error_code == E.GROUP_MAX_SIZE_REACHED
        assert log_end(node, coordinator) == before and list(coordinator.consumer_groups["cg"].members) == ["a"]
        assert (await hb(coordinator, "a", 1, owned=[])).error_code == E.NONE  # members still heartbeat
    run(tmp_path, scenario, **{"group.consumer.max.size": 1})


def test_static_member_that_left_temporarily_is_replaced_without_a_rebalance(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        a = await hb(coordinator, "a", 0, instance_id="i1")
        epoch = coordinator.consumer_groups["cg"].group_epoch
        left = await hb(coordinator, "a", -2, instance_id="i1")
        assert (left.error_code, left.member_epoch) == (E.NONE, -2)
        back = await hb(coordinator, "a2", 0, instance_id="i1")
        assert back.error_code == E.NONE and owned_of(back) == owned_of(a)
        group = coordinator.consumer_groups["cg"]
        assert list(group.members) == ["a2"] and group.group_epoch == epoch
    run(tmp_path, scenario)


def test_leave_bumps_the_epoch_and_frees_the_partitions(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        a = await hb(coordinator, "a", 0)
        await hb(coordinator, "b", 0)
        await hb(coordinator, "a", a.member_epoch, owned=[])   # a revokes everything it must
        gone = await hb(coordinator, "a", -1)
        assert (gone.error_code, gone.member_epoch) == (E.NONE, -1)
        b = await hb(coordinator, "b", 2, owned=[])
        assert count(b) == 2 and list(coordinator.consumer_groups["cg"].members) == ["b"]
    run(tmp_path, scenario)


def test_offset_commit_and_fetch_check_the_member_epoch(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 1)
        a = await hb(coordinator, "a", 0)
        value = OffsetValue(5, -1, "", 0)
        stale = coordinator.commit_offsets("cg", "a", None, a.member_epoch - 1, {("t", 0): value},
                                           api_version=9)
        assert stale == {("t", 0): E.STALE_MEMBER_EPOCH}
        assert coordinator.commit_offsets("cg", "x", None, 1, {("t", 0): value}, api_version=9) == {
            ("t", 0): E.UNKNOWN_MEMBER_ID}
        assert coordinator.commit_offsets("cg", "a", None, 1, {("t", 0): value}, api_version=8) == {
            ("t", 0): E.UNSUPPORTED_VERSION}
        assert coordinator.commit_offsets("cg", "a", None, 1, {("t", 0): value}, api_version=9) == {
            ("t", 0): E.NONE}
        assert coordinator.fetch_offsets("cg", [("t", 0)], "a", 0)[0] == E.STALE_MEMBER_EPOCH
        error, rows = coordinator.fetch_offsets("cg", [("t", 0)], "a", 1)
        assert error == E.NONE and rows[0][2].offset == 5
        assert coordinator.fetch_offsets("cg", [("t", 0)])[1][0][2].offset == 5   # admin fetch
    run(tmp_path, scenario)


def test_regex_subscription_resolves_topics_and_follows_new_ones(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("orders-1", 1)
        await node.create_topic("other", 1)
        a = await hb(coordinator, "a", 0, topics=(), subscribed_topic_regex="orders-.*",
                     subscribed_topic_names=None)
        assert a.error_code == E.NONE and count(a) == 1
        await node.create_topic("orders-2", 2)
        a2 = await hb(coordinator, "a", a.member_epoch, owned=owned_of(a))
        assert count(a2) == 3 and a2.member_epoch == a.member_epoch + 1
    run(tmp_path, scenario)


def test_a_restarted_coordinator_replays_the_group_as_it_was(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 4)
        a = await hb(coordinator, "a", 0, instance_id="i1", server_assignor="range")
        b = await hb(coordinator, "b", 0)
        await hb(coordinator, "a", a.member_epoch, owned=owned_of(a))
        before = coordinator.consumer_groups["cg"]
        snapshot = (before.group_epoch, before.assignment_epoch, before.members, before.target,
                    before.static_members, before.state)
        coordinator = await node.restart()
        after = coordinator.consumer_groups["cg"]
        assert (after.group_epoch, after.assignment_epoch, after.members, after.target,
                after.static_members, after.state) == snapshot
        assert (await hb(coordinator, "b", b.member_epoch, owned=[])).error_code == E.NONE
    run(tmp_path, scenario)


def test_consumer_group_describe_and_list_show_the_type(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        await hb(coordinator, "a", 0)
        described = coordinator.consumer_group_describe("cg")
        assert (described.error_code, described.group_state, described.assignor_name) == (
            E.NONE, "Stable", "uniform")
        member = described.members[0]
        assert member.member_type == 1 and [name for _, name, _ in member.assignment] == ["t"]
        assert coordinator.consumer_group_describe("nope").error_code == E.GROUP_ID_NOT_FOUND
        assert ("cg", "consumer", "Stable", "consumer") in coordinator.list_groups()[1]
        assert coordinator.describe_group("cg")[1].message == "Group cg is not a classic group."
    run(tmp_path, scenario)



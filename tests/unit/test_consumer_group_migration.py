"""Classic and consumer-protocol members in one group: a classic group
upgraded by the first ConsumerGroupHeartbeat, its classic members served
through JoinGroup/SyncGroup/Heartbeat inside the consumer group, and the
downgrade when the last consumer-protocol member leaves."""
from __future__ import annotations

import pytest

from kcore.coordinator.group import consumer_protocol
from kcore.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import form_group, join, run
from tests.unit.test_consumer_group_coordinator import hb


async def classic_pair(node, coordinator):
    await node.create_topic("t", 4)
    members = await form_group(coordinator, 2, group="cg")
    return members


def test_consumer_heartbeat_upgrades_a_classic_group_and_its_members_rejoin(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await classic_pair(node, coordinator)
        generation = leader.generation_id
        joined = await hb(coordinator, "new", 0)
        assert joined.error_code == E.NONE
        assert "cg" not in coordinator.groups and "cg" in coordinator.consumer_groups
        group = coordinator.consumer_groups["cg"]
        assert group.group_epoch == generation + 1 and group.num_classic_members() == 2
        # The classic members learn of the rebalance from their heartbeat, rejoin and sync.
        assert coordinator.heartbeat("cg", leader.member_id, None, generation) == E.REBALANCE_IN_PROGRESS
        results = []
        for old in (leader, follower):
            rejoin = await join(coordinator, "cg", member_id=old.member_id)
            assert rejoin.error_code == E.NONE and rejoin.leader_id == "" and rejoin.protocol_name == "range"
            sync = await coordinator.sync_group("cg", rejoin.generation_id, old.member_id, None, {})
            results.append((rejoin, sync))
        assert all(sync.error_code == E.NONE for _, sync in results)
        # Rounds of heartbeats (and rejoins when told) until the group is stable.
        generations = {old.member_id: rejoin.generation_id for old, (rejoin, _) in zip((leader, follower), results)}
        owned = {old.member_id: consumer_protocol.assigned_partitions(sync.assignment)
                 for old, (_, sync) in zip((leader, follower), results)}
        epoch = joined.member_epoch
        mine = [(t, sorted(p)) for t, p in (joined.assignment or {}).items()]
        for _ in range(6):
            new = await hb(coordinator, "new", epoch, owned=mine)
            epoch = new.member_epoch
            if new.assignment is not None:
                mine = [(t, sorted(p)) for t, p in new.assignment.items()]
            for member_id in generations:
                if coordinator.heartbeat("cg", member_id, None, generations[member_id]) == E.REBALANCE_IN_PROGRESS:
                    rejoin = await join(coordinator, "cg", member_id=member_id)
                    generations[member_id] = rejoin.generation_id
                    sync = await coordinator.sync_group("cg", rejoin.generation_id, member_id, None, {})
                    owned[member_id] = consumer_protocol.assigned_partitions(sync.assignment)
        classic_parts = [p for parts in owned.values() for _, p in parts]
        new_parts = [p for _, parts in mine for p in parts]
        assert sorted(classic_parts + new_parts) == [0, 1, 2, 3]
        assert coordinator.consumer_groups["cg"].state.kafka_name == "Stable"
        assert coordinator.consumer_group_describe("cg").members[0].member_type in (0, 1)
    run(tmp_path, scenario)


def test_last_consumer_member_leaving_downgrades_to_a_classic_group(tmp_path):
    async def scenario(node, coordinator):
        leader, _ = await classic_pair(node, coordinator)
        joined = await hb(coordinator, "new", 0)
        left = await hb(coordinator, "new", -1)
        assert left.error_code == E.NONE
        assert "cg" in coordinator.groups and "cg" not in coordinator.consumer_groups
        classic = coordinator.groups["cg"]
        assert classic.state.kafka_name == "PreparingRebalance" and classic.size == 2
        assert joined.member_epoch >= leader.generation_id
        coordinator = await node.restart()   # the conversion is in the log
        assert "cg" in coordinator.groups and "cg" not in coordinator.consumer_groups
    run(tmp_path, scenario)


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_upgrade_refused_by_the_migration_policy(tmp_path, policy):
    async def scenario(node, coordinator):
        await classic_pair(node, coordinator)
        refused = await hb(coordinator, "new", 0)
        assert refused.error_code == E.GROUP_ID_NOT_FOUND and "cg" in coordinator.groups
    run(tmp_path, scenario, **{"group.consumer.migration.policy": policy})


def test_empty_classic_group_is_replaced_and_keeps_its_offsets(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 1)
        from kcore.coordinator.group.records import OffsetValue
        assert coordinator.commit_offsets("cg", "", None, -1, {("t", 0): OffsetValue(7, -1, "", 0)}) == {
            ("t", 0): E.NONE}
        assert (await hb(coordinator, "a", 0)).error_code == E.NONE
        assert coordinator.fetch_offsets("cg", [("t", 0)], "a", 1)[1][0][2].offset == 7
    run(tmp_path, scenario, **{"group.consumer.migration.policy": "disabled"})

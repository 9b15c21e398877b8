"""GroupCoordinator membership without sockets: joins, protocol vote,
SyncGroup, heartbeats, session and rebalance timeouts, static members.

Each test drives a real coordinator over real partition logs in a temp dir
(controller, log manager, replica manager, __consumer_offsets) on an
asyncio loop; nothing is mocked. Timeouts are judged by order, never by a
wall-clock upper bound: what a timer did is read against the loop time it
was due at (``TimerHandle.when()``), so a loaded machine cannot fail them.
"""
from __future__ import annotations

import asyncio

import pytest

from kcore.clock import wall_ms
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.group.state import GroupState
from kcore.protocol.errors import ErrorCode as E
from tests.support.clock import HOUR_S, SteppedClock
from tests.support.group_coordinator import RANGE, SUB, form_group, join, run

# A loop may run a timer up to one tick of its clock early (uvloop: 1 ms).
TIMER_EARLY_S = 0.002


def test_three_members_form_one_generation_with_one_leader(tmp_path):
    async def scenario(node, coordinator):
        results = await form_group(coordinator, 3)
        leader, *followers = results
        assert {r.generation_id for r in results} == {1}
        assert {r.leader_id for r in results} == {leader.member_id}
        assert {r.protocol_name for r in results} == {"range"}
        assert sorted(m[0] for m in leader.members) == sorted(r.member_id for r in results)
        assert all(r.members == [] for r in followers)
        assert all(r.member_id.startswith(f"c{i}-") for i, r in enumerate(
            sorted(results, key=lambda r: r.member_id)))
        assert coordinator.groups["g"].state is GroupState.STABLE
    run(tmp_path, scenario)


def test_rebalance_completes_when_last_member_rejoins_not_on_a_timeout(tmp_path):
    async def scenario(node, coordinator):
        members = await form_group(coordinator, 3, session=30_000, rebalance=30_000)
        newcomer = asyncio.ensure_future(join(coordinator, session=30_000, rebalance=30_000))
        await asyncio.sleep(0.01)
        assert coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE
        rebalance_timeout = coordinator.groups["g"].join_timer
        for member in members:
            assert coordinator.heartbeat("g", member.member_id, None, 1) == E.REBALANCE_IN_PROGRESS
        rejoins = [join(coordinator, member_id=m.member_id, session=30_000, rebalance=30_000)
                   for m in members]
        results = await asyncio.gather(newcomer, *rejoins)
        # Completed by the last rejoin: the 30 s timer was not due yet.
        assert asyncio.get_running_loop().time() < rebalance_timeout.when()
        assert {r.generation_id for r in results} == {2}
        assert coordinator.groups["g"].state is GroupState.COMPLETING_REBALANCE
    run(tmp_path, scenario)


def test_protocol_is_the_common_one_most_members_prefer(tmp_path):
    async def scenario(node, coordinator):
        preferences = [[("roundrobin", SUB), ("range", SUB)], [("range", SUB), ("roundrobin", SUB)],
                       [("range", SUB), ("sticky", SUB), ("roundrobin", SUB)]]
        results = await asyncio.gather(*[join(coordinator, protocols=p) for p in preferences])
        assert {r.protocol_name for r in results} == {"range"}
        rejected = await join(coordinator, protocols=[("sticky", SUB)])
        assert rejected.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        other_type = await join(coordinator, protocols=RANGE, protocol_type="connect")
        assert other_type.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(coordinator, group="h", protocols=[])).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    run(tmp_path, scenario)


def test_member_id_required_then_join_waits_for_pending_member(tmp_path):
    async def scenario(node, coordinator):
        first = await join(coordinator, require_known=True)
        assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id.startswith("client-")
        assert coordinator.groups["g"].pending_members == {first.member_id}
        result = await join(coordinator, member_id=first.member_id, require_known=True)
        assert result.error_code == E.NONE and result.member_id == first.member_id
        assert result.leader_id == first.member_id and result.generation_id == 1
    run(tmp_path, scenario)


def test_pending_member_that_never_rejoins_expires_after_session_timeout(tmp_path):
    async def scenario(node, coordinator):
        await form_group(coordinator, 1, session=10_000)
        loop = asyncio.get_running_loop()
        asked = loop.time()
        pending = await join(coordinator, require_known=True, session=200)
        assert pending.error_code == E.MEMBER_ID_REQUIRED
        assert coordinator.groups["g"].pending_members == {pending.member_id}
        for _ in range(200):  # bounded: 10 s, for a timer due in 0.2 s
            if not coordinator.groups["g"].pending_members:
                break
            await asyncio.sleep(0.05)
        assert coordinator.groups["g"].pending_members == set()
        assert loop.time() - asked >= 0.2 - TIMER_EARLY_S  # at the session timeout, not before
    run(tmp_path, scenario)


def test_initial_delay_extends_while_new_members_arrive(tmp_path):
    async def scenario(node, coordinator):
        loop = asyncio.get_running_loop()
        delays_ended: list[float] = []
        delay_expired = coordinator._initial_delay_expired

        def counted(*args):
            delays_ended.append(loop.time())
            delay_expired(*args)

        coordinator._initial_delay_expired = counted  # the timers call it through the instance
        started = loop.time()
        first = asyncio.ensure_future(join(coordinator))
        for _ in range(100):  # bounded: the first join starts the delay in one step
            if "g" in coordinator.groups:
                break
            await asyncio.sleep(0)
        group = coordinator.groups["g"]
        assert group.in_initial_delay and not group.new_member_added
        second = asyncio.ensure_future(join(coordinator))
        await asyncio.sleep(0)
        assert group.in_initial_delay and group.new_member_added  # arrived inside the delay
        results = await asyncio.gather(first, second)
        # One delay (300 ms), extended once because a member arrived in it.
        assert len(delays_ended) == 2, delays_ended
        assert delays_ended[0] - started >= 0.3 - TIMER_EARLY_S
        assert delays_ended[1] - delays_ended[0] >= 0.3 - TIMER_EARLY_S
        assert {r.generation_id for r in results} == {1}
        assert len(next(r for r in results if r.members).members) == 2
    run(tmp_path, scenario, **{"group.initial.rebalance.delay.ms": 300})


def test_sync_from_a_follower_waits_for_the_leader(tmp_path):
    async def scenario(node, coordinator):
        results = await asyncio.gather(join(coordinator), join(coordinator))
        leader = next(r for r in results if r.members)
        follower = next(r for r in results if not r.members)
        waiting = asyncio.ensure_future(coordinator.sync_group("g", 1, follower.member_id, None, {}))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        assert coordinator.heartbeat("g", follower.member_id, None, 1) == E.NONE
        await coordinator.sync_group("g", 1, leader.member_id, None, {follower.member_id: b"x"})
        assert (await waiting).assignment == b"x"
        leader_again = await coordinator.sync_group("g", 1, leader.member_id, None, {})
        assert leader_again.assignment == b""  # missing from the leader's map: empty
    run(tmp_path, scenario)


def test_sync_and_heartbeat_fencing_errors(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await form_group(coordinator, 2)
        assert coordinator.heartbeat("g", follower.member_id, None, 7) == E.ILLEGAL_GENERATION
        assert coordinator.heartbeat("g", "nobody", None, 1) == E.UNKNOWN_MEMBER_ID
        assert coordinator.heartbeat("nogroup", "nobody", None, 1) == E.UNKNOWN_MEMBER_ID
        assert coordinator.heartbeat("", "x", None, 1) == E.INVALID_GROUP_ID
        stale = await coordinator.sync_group("g", 7, leader.member_id, None, {})
        assert stale.error_code == E.ILLEGAL_GENERATION
        assert (await coordinator.sync_group("g", 1, "nobody", None, {})).error_code == E.UNKNOWN_MEMBER_ID
        assert (await join(coordinator, member_id="nobody")).error_code == E.UNKNOWN_MEMBER_ID
        assert (await join(coordinator, group="fresh", member_id="x")).error_code == E.UNKNOWN_MEMBER_ID
        rejoin = asyncio.ensure_future(join(coordinator, member_id=leader.member_id))
        await asyncio.sleep(0.01)
        sync = await coordinator.sync_group("g", 1, follower.member_id, None, {})
        assert sync.error_code == E.REBALANCE_IN_PROGRESS
        rejoin.cancel()
    run(tmp_path, scenario)


def test_session_timeout_removes_a_silent_member_and_survivor_rebalances_alone(tmp_path):
    async def scenario(node, coordinator):
        survivor, silent = await form_group(coordinator, 2, session=300, rebalance=30_000)
        error = E.NONE
        for _ in range(200):  # bounded: 10 s, for a session timeout of 0.3 s
            if error != E.NONE:
                break
            await asyncio.sleep(0.05)
            error = coordinator.heartbeat("g", survivor.member_id, None, 1)
        assert error == E.REBALANCE_IN_PROGRESS
        assert not coordinator.groups["g"].has(silent.member_id)
        rebalance_timeout = coordinator.groups["g"].join_timer
        result = await join(coordinator, member_id=survivor.member_id, session=300, rebalance=30_000)
        # The survivor alone completes the join: the 30 s timer was not due yet.
        assert asyncio.get_running_loop().time() < rebalance_timeout.when()
        assert result.generation_id == 2 and [m[0] for m in result.members] == [survivor.member_id]
    run(tmp_path, scenario)


def test_member_that_does_not_rejoin_is_dropped_after_rebalance_timeout(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await form_group(coordinator, 2, rebalance=300)
        rejoin = asyncio.ensure_future(join(coordinator, member_id=leader.member_id, rebalance=300))
        await asyncio.sleep(0)
        rebalance_timeout = coordinator.groups["g"].join_timer
        for _ in range(200):  # bounded: 10 s, for a rebalance timeout of 0.3 s
            if rejoin.done():
                break
            coordinator.heartbeat("g", follower.member_id, None, 1)
            await asyncio.sleep(0.05)
        assert rejoin.done()
        result = await rejoin
        # Completed by the timer, the follower heartbeating but never rejoining.
        assert asyncio.get_running_loop().time() >= rebalance_timeout.when() - TIMER_EARLY_S
        assert result.generation_id == 2 and [m[0] for m in result.members] == [leader.member_id]
        assert coordinator.heartbeat("g", follower.member_id, None, 2) == E.UNKNOWN_MEMBER_ID
    run(tmp_path, scenario)


@pytest.mark.parametrize("wall_step_s", [HOUR_S, -HOUR_S], ids=["forward-1h", "back-1h"])
def test_a_wall_clock_step_expires_nothing_and_a_silent_member_still_times_out(tmp_path, wall_step_s):
    """Sessions end on event-loop timers (the monotonic clock): members that
    heartbeat through an hour's step of the wall clock stay, their offsets
    stay, and a member that falls silent afterwards still leaves after
    its session timeout."""
    clock = SteppedClock()

    async def scenario(node, coordinator):
        loop = asyncio.get_running_loop()
        talker, silent = await form_group(coordinator, 2, session=1000, rebalance=30_000)
        committed = OffsetValue(5, -1, "", wall_ms(clock))
        assert coordinator.commit_offsets("g", talker.member_id, None, 1, {("t", 0): committed}) == {
            ("t", 0): E.NONE}
        group = coordinator.groups["g"]
        clock.step(wall_step_s)
        stepped = loop.time()
        while loop.time() - stepped < 2.5:  # 2.5 session timeouts after the step
            for member in (talker, silent):
                assert coordinator.heartbeat("g", member.member_id, None, 1) == E.NONE
            last_heard = loop.time()
            await asyncio.sleep(0.05)
        assert (group.state, group.generation_id, group.size) == (GroupState.STABLE, 1, 2)
        assert coordinator.cleanup_expired_offsets() == 0 and group.offsets == {("t", 0): committed}
        error = E.NONE
        for _ in range(200):  # bounded: 10 s, for a session of 1 s
            if error != E.NONE:
                break
            await asyncio.sleep(0.05)
            error = coordinator.heartbeat("g", talker.member_id, None, 1)
        assert error == E.REBALANCE_IN_PROGRESS and not group.has(silent.member_id)
        assert loop.time() - last_heard >= 1.0 - TIMER_EARLY_S
    run(tmp_path, scenario, clock)


def test_static_member_restart_keeps_assignment_without_rebalance(tmp_path):
    async def scenario(node, coordinator):
        a, b = await form_group(coordinator, 2, instances=["a", "b"])
        a_assignment = f"assignment-{a.member_id}".encode()
        group = coordinator.groups["g"]
        restarted_a = next(r for r in (a, b) if group.get(r.member_id).group_instance_id == "a")
        result = await join(coordinator, instance="a")
        assert result.error_code == E.NONE and result.generation_id == 1
        assert result.member_id != restarted_a.member_id and result.members == []
        assert result.leader_id == a.member_id  # the previous leader id, as Kafka returns
        assert coordinator.groups["g"].state is GroupState.STABLE
        sync = await coordinator.sync_group("g", 1, result.member_id, "a", {})
        expected = a_assignment if restarted_a is a else f"assignment-{b.member_id}".encode()
        assert sync.assignment == expected
        assert coordinator.heartbeat("g", restarted_a.member_id, "a", 1) == E.FENCED_INSTANCE_ID
        other = b if restarted_a is a else a
        assert coordinator.heartbeat("g", other.member_id, "b" if restarted_a is a else "a", 1) == E.NONE
    run(tmp_path, scenario)


def test_duplicate_static_instance_with_another_member_id_is_fenced(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1, instances=["solo"])
        fenced = await join(coordinator, member_id="solo-impostor", instance="solo")
        assert fenced.error_code == E.FENCED_INSTANCE_ID
        impostor_sync = await coordinator.sync_group("g", 1, "solo-impostor", "solo", {})
        assert impostor_sync.error_code == E.FENCED_INSTANCE_ID
        assert coordinator.leave_group("g", [("solo-impostor", "solo")]) == (E.NONE, [E.FENCED_INSTANCE_ID])
        assert coordinator.heartbeat("g", member.member_id, "solo", 1) == E.NONE
    run(tmp_path, scenario)


def test_static_member_survives_coordinator_restart(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1, instances=["keep"])
        coordinator = await node.restart()
        group = coordinator.groups["g"]
        assert group.state is GroupState.STABLE and group.static_members == {"keep": member.member_id}
        assert coordinator.heartbeat("g", member.member_id, "keep", 1) == E.NONE
        result = await join(coordinator, instance="keep")
        sync = await coordinator.sync_group("g", 1, result.member_id, "keep", {})
        assert sync.assignment == f"assignment-{member.member_id}".encode()
    run(tmp_path, scenario)


def test_invalid_session_timeout_and_group_id(tmp_path):
    async def scenario(node, coordinator):
        assert (await join(coordinator, session=99)).error_code == E.INVALID_SESSION_TIMEOUT
        assert (await join(coordinator, session=1_800_001)).error_code == E.INVALID_SESSION_TIMEOUT
        assert (await join(coordinator, group="")).error_code == E.INVALID_GROUP_ID
    run(tmp_path, scenario)


def test_group_max_size_refuses_extra_members(tmp_path):
    async def scenario(node, coordinator):
        await form_group(coordinator, 2)
        extra = await join(coordinator)
        assert extra.error_code == E.GROUP_MAX_SIZE_REACHED and extra.member_id == ""
        assert coordinator.groups["g"].size == 2
    run(tmp_path, scenario, **{"group.max.size": 2})


def test_leave_group_batch_reports_per_member(tmp_path):
    async def scenario(node, coordinator):
        members = await form_group(coordinator, 3, instances=["a", "b", "c"])
        by_instance = {coordinator.groups["g"].get(m.member_id).group_instance_id: m.member_id
                       for m in members}
        error, errors = coordinator.leave_group("g", [(by_instance["a"], "a"), ("", "b"),
                                                      ("ghost", None), ("", "zz")])
        assert error == E.NONE
        assert errors == [E.NONE, E.NONE, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
        assert list(coordinator.groups["g"].static_members) == ["c"]
        assert coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE
        assert coordinator.leave_group("unknown", [("x", None)]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    run(tmp_path, scenario)


def test_last_member_leaving_empties_the_group_at_a_new_generation(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1)
        assert coordinator.leave_group("g", [(member.member_id, None)]) == (E.NONE, [E.NONE])
        group = coordinator.groups["g"]
        assert group.state is GroupState.EMPTY and group.generation_id == 2
        assert group.protocol_name is None and group.leader_id is None
    run(tmp_path, scenario)


def test_describe_and_list_groups(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await form_group(coordinator, 2)
        error, summary = coordinator.describe_group("g")
        assert error == E.NONE and summary.state == "Stable" and summary.protocol == "range"
        assert {m.member_id: m.assignment for m in summary.members} == {
            r.member_id: f"assignment-{r.member_id}".encode() for r in (leader, follower)}
        assert {m.metadata for m in summary.members} == {SUB}
        assert all(m.client_host == "/127.0.0.1" for m in summary.members)
        assert coordinator.describe_group("nope")[1].state == "Dead"
        assert coordinator.list_groups() == (E.NONE, [("g", "consumer", "Stable", "classic")])
        rejoin = asyncio.ensure_future(join(coordinator, member_id=leader.member_id))
        await asyncio.sleep(0.01)
        _, preparing = coordinator.describe_group("g")
        assert preparing.state == "PreparingRebalance" and preparing.protocol == ""
        assert all(m.metadata == b"" and m.assignment == b"" for m in preparing.members)
        rejoin.cancel()
    run(tmp_path, scenario)

"""Committed offsets without sockets: commit validation, fetch, replay of
__consumer_offsets after a restart, retention, DeleteGroups, OffsetDelete,
and what a failed append does."""
from __future__ import annotations

import asyncio
import os

import pytest

from kcore.coordinator.group import OFFSETS_TOPIC
from kcore.coordinator.group import records as offsets_records
from kcore.coordinator.group.manager import StoreError
from kcore.coordinator.group.offsets import sync_error_code
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.group.state import GroupState
from kcore.log.durability import GroupCommitSyncer
from kcore.log.errors import LogError
from kcore.log.sync_backends import IoUringBackend
from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode as E
from tests.support.group_coordinator import form_group, join, run, subscription
from tests.support.log import segment_fd_on_a_pipe

DAY_MS = 24 * 3600 * 1000


def offset(value: int, metadata: str = "", timestamp: int = 1_000, expire: int = -1) -> OffsetValue:
    return OffsetValue(value, 0, metadata, timestamp, expire)


def log_records(node, group_id: str) -> list[record_codec.Record]:
    """Every record of the group's __consumer_offsets partition, in log order."""
    index = node.coordinator.manager.partition_for(group_id)
    partition = node.replica_manager.get(OFFSETS_TOPIC, index)
    slices = partition.read(0, 1 << 24, False, True)
    data = b"".join(os.pread(s.fd, s.size, s.position) for s in slices)
    return list(record_codec.iter_records(data))


def test_simple_commit_creates_an_empty_group_and_fetch_returns_metadata(tmp_path):
    async def scenario(node, coordinator):
        await node.create_topic("t", 2)
        errors = coordinator.commit_offsets("simple", "", None, -1, {("t", 0): offset(5, "m0"),
                                                                     ("t", 1): offset(9)})
        assert errors == {("t", 0): E.NONE, ("t", 1): E.NONE}
        assert coordinator.groups["simple"].state is GroupState.EMPTY
        error, rows = coordinator.fetch_offsets("simple", [("t", 0), ("t", 1), ("t", 2)])
        assert error == E.NONE
        assert [(t, p, v.offset if v else -1, v.metadata if v else None) for t, p, v in rows] == [
            ("t", 0, 5, "m0"), ("t", 1, 9, ""), ("t", 2, -1, None)]
        assert [(t, p) for t, p, _ in coordinator.fetch_offsets("simple", None)[1]] == [("t", 0), ("t", 1)]
        assert coordinator.fetch_offsets("nobody", None) == (E.NONE, [])
        assert coordinator.list_groups() == (E.NONE, [("simple", "", "Empty", "classic")])
    run(tmp_path, scenario)


def test_commit_is_in_the_log_as_kafka_records_before_it_is_acknowledged(tmp_path):
    async def scenario(node, coordinator):
        coordinator.commit_offsets("g", "", None, -1, {("t", 3): offset(42, "meta", 777)})
        coordinator.commit_offsets("g", "", None, -1, {("t", 3): offset(43, "", 778, expire=999)})
        records = log_records(node, "g")
        assert [offsets_records.decode_key(r.key) for r in records] == [
            offsets_records.OffsetKey("g", "t", 3)] * 2
        assert records[0].value[:2] == b"\x00\x03" and records[1].value[:2] == b"\x00\x01"
        assert offsets_records.decode_offset_value(records[0].value) == OffsetValue(42, 0, "meta", 777)
        assert offsets_records.decode_offset_value(records[1].value).expire_timestamp == 999
    run(tmp_path, scenario)


def test_member_commit_validation_follows_kafka(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await form_group(coordinator, 2)
        good = {("t", 0): offset(1)}
        assert coordinator.commit_offsets("g", leader.member_id, None, 1, good) == {("t", 0): E.NONE}
        assert coordinator.commit_offsets("g", "ghost", None, 1, good) == {("t", 0): E.UNKNOWN_MEMBER_ID}
        assert coordinator.commit_offsets("g", leader.member_id, None, 5, good) == {
            ("t", 0): E.ILLEGAL_GENERATION}
        assert coordinator.commit_offsets("g", "", None, -1, good) == {("t", 0): E.UNKNOWN_MEMBER_ID}
        assert coordinator.commit_offsets("new", "m", None, 3, good) == {("t", 0): E.ILLEGAL_GENERATION}
        big = {("t", 0): offset(2, "x" * 4097), ("t", 1): offset(3)}
        assert coordinator.commit_offsets("g", leader.member_id, None, 1, big) == {
            ("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}
        # PreparingRebalance: the old generation may still commit what it consumed.
        rejoin = asyncio.ensure_future(join(coordinator, member_id=leader.member_id))
        await asyncio.sleep(0.01)
        assert coordinator.commit_offsets("g", follower.member_id, None, 1, good) == {("t", 0): E.NONE}
        await join(coordinator, member_id=follower.member_id)
        await rejoin
        # CompletingRebalance: the new generation has no assignment yet.
        assert coordinator.commit_offsets("g", follower.member_id, None, 2, good) == {
            ("t", 0): E.REBALANCE_IN_PROGRESS}
        assert coordinator.commit_offsets("g", follower.member_id, None, 1, good) == {
            ("t", 0): E.ILLEGAL_GENERATION}
    run(tmp_path, scenario)


def test_groups_and_offsets_are_rebuilt_from_the_log_after_restart(tmp_path):
    async def scenario(node, coordinator):
        leader, follower = await form_group(coordinator, 2)
        coordinator.commit_offsets("g", leader.member_id, None, 1, {("t", 0): offset(10, "a"),
                                                                    ("t", 1): offset(20)})
        coordinator.commit_offsets("g", follower.member_id, None, 1, {("t", 1): offset(21, "b")})
        coordinator.commit_offsets("solo", "", None, -1, {("u", 0): offset(7)})
        coordinator = await node.restart()
        group = coordinator.groups["g"]
        assert group.state is GroupState.STABLE and group.generation_id == 1
        assert group.leader_id == leader.member_id and group.protocol_name == "range"
        assert {m.member_id: m.assignment for m in group.members.values()} == {
            r.member_id: f"assignment-{r.member_id}".encode() for r in (leader, follower)}
        assert group.subscribed_topics == {"t"}
        assert {k: (v.offset, v.metadata) for k, v in group.offsets.items()} == {
            ("t", 0): (10, "a"), ("t", 1): (21, "b")}
        assert coordinator.groups["solo"].offsets[("u", 0)].offset == 7
        assert coordinator.heartbeat("g", follower.member_id, None, 1) == E.NONE
    run(tmp_path, scenario)


def test_expired_members_of_a_restored_group_are_removed_after_session_timeout(tmp_path):
    async def scenario(node, coordinator):
        await form_group(coordinator, 2, session=200)
        coordinator = await node.restart()
        assert coordinator.groups["g"].size == 2
        await asyncio.sleep(0.4)
        group = coordinator.groups["g"]
        assert group.size == 0 and group.state is GroupState.EMPTY and group.generation_id == 2
    run(tmp_path, scenario)


def test_empty_group_offsets_expire_from_when_it_became_empty(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1)
        coordinator.commit_offsets("g", member.member_id, None, 1, {("t", 0): offset(5, timestamp=0)})
        coordinator.leave_group("g", [(member.member_id, None)])
        emptied_at = coordinator.groups["g"].current_state_timestamp
        retention = coordinator.config.offsets_retention_ms
        assert coordinator.cleanup_expired_offsets(emptied_at + retention - 1) == 0
        assert coordinator.cleanup_expired_offsets(emptied_at + retention) == 1
        assert "g" not in coordinator.groups
        kinds = [(type(offsets_records.decode_key(r.key)).__name__, r.value is None)
                 for r in log_records(node, "g")[-2:]]
        assert kinds == [("OffsetKey", True), ("GroupKey", True)]
        coordinator = await node.restart()
        assert "g" not in coordinator.groups
    run(tmp_path, scenario)


def test_stable_consumer_group_keeps_offsets_of_subscribed_topics(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1)  # subscribed to "t"
        coordinator.commit_offsets("g", member.member_id, None, 1, {
            ("t", 0): offset(1, timestamp=0), ("old", 0): offset(2, timestamp=0)})
        coordinator.commit_offsets("simple", "", None, -1, {
            ("t", 0): offset(3, timestamp=0), ("t", 1): offset(4, timestamp=0, expire=10 * DAY_MS)})
        removed = coordinator.cleanup_expired_offsets(8 * DAY_MS)
        assert removed == 2  # ("old", 0) of g and the default-retention offset of simple
        assert set(coordinator.groups["g"].offsets) == {("t", 0)}
        assert set(coordinator.groups["simple"].offsets) == {("t", 1)}
        assert coordinator.cleanup_expired_offsets(10 * DAY_MS) == 1
        assert "simple" not in coordinator.groups
    run(tmp_path, scenario)


def test_delete_groups_only_empty_ones(tmp_path):
    async def scenario(node, coordinator):
        await form_group(coordinator, 1)
        coordinator.commit_offsets("idle", "", None, -1, {("t", 0): offset(1)})
        results = coordinator.delete_groups(["g", "idle", "missing"])
        assert results == {"g": E.NON_EMPTY_GROUP, "idle": E.NONE, "missing": E.GROUP_ID_NOT_FOUND}
        assert "idle" not in coordinator.groups
        assert coordinator.fetch_offsets("idle", [("t", 0)])[1] == [("t", 0, None)]
        coordinator = await node.restart()
        assert "idle" not in coordinator.groups and "g" in coordinator.groups
    run(tmp_path, scenario)


def test_offset_delete_refuses_subscribed_topics_of_an_active_group(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1)
        coordinator.commit_offsets("g", member.member_id, None, 1, {("t", 0): offset(1), ("x", 0): offset(2)})
        error, errors = coordinator.delete_offsets("g", [("t", 0), ("x", 0)])
        assert error == E.NONE and errors == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("x", 0): E.NONE}
        assert set(coordinator.groups["g"].offsets) == {("t", 0)}
        assert coordinator.delete_offsets("missing", [("t", 0)]) == (E.GROUP_ID_NOT_FOUND, {})
        coordinator.leave_group("g", [(member.member_id, None)])
        assert coordinator.delete_offsets("g", [("t", 0)]) == (E.NONE, {("t", 0): E.NONE})
        assert "g" not in coordinator.groups  # empty and without offsets: removed
    run(tmp_path, scenario)


def test_non_consumer_group_with_members_refuses_offset_delete(tmp_path):
    async def scenario(node, coordinator):
        await form_group(coordinator, 1, protocol_type="connect")
        assert coordinator.delete_offsets("g", [("t", 0)]) == (E.NON_EMPTY_GROUP, {})
    run(tmp_path, scenario)


def test_group_metadata_too_large_for_the_log_fails_sync_and_rebalances(tmp_path):
    async def scenario(node, coordinator):
        big = subscription("t") + b"\0" * 6000
        results = await asyncio.gather(join(coordinator, protocols=[("range", big)]),
                                       join(coordinator, protocols=[("range", big)]))
        leader = next(r for r in results if r.members)
        follower = next(r for r in results if not r.members)
        waiting = asyncio.ensure_future(coordinator.sync_group("g", 1, follower.member_id, None, {}))
        await asyncio.sleep(0)
        result = await coordinator.sync_group("g", 1, leader.member_id, None, {})
        assert result.error_code == E.UNKNOWN_SERVER_ERROR
        assert (await waiting).error_code == E.UNKNOWN_SERVER_ERROR
        assert coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE
    run(tmp_path, scenario, **{"message.max.bytes": 10_000})


def test_commit_too_large_for_the_log_is_invalid_commit_offset_size(tmp_path):
    async def scenario(node, coordinator):
        offsets = {("t", p): offset(p, "m" * 4000) for p in range(4)}
        errors = coordinator.commit_offsets("g", "", None, -1, offsets)
        assert set(errors.values()) == {E.INVALID_COMMIT_OFFSET_SIZE}
        assert coordinator.fetch_offsets("g", [("t", 0)])[1] == [("t", 0, None)]
    run(tmp_path, scenario, **{"message.max.bytes": 10_000})


def test_offsets_of_deleted_topics_are_dropped_and_tombstoned(tmp_path):
    async def scenario(node, coordinator):
        (member,) = await form_group(coordinator, 1)
        coordinator.commit_offsets("g", member.member_id, None, 1,
                                   {("t", 0): offset(1), ("gone", 0): offset(2)})
        coordinator.commit_offsets("only-gone", "", None, -1, {("gone", 1): offset(3)})
        assert coordinator.on_topics_deleted({"gone"}) == 2
        assert set(coordinator.groups["g"].offsets) == {("t", 0)}
        assert "only-gone" not in coordinator.groups
        coordinator = await node.restart()
        assert set(coordinator.groups["g"].offsets) == {("t", 0)}
        assert "only-gone" not in coordinator.groups
    run(tmp_path, scenario)


def test_refused_first_join_leaves_no_group(tmp_path):
    async def scenario(node, coordinator):
        refused = await join(coordinator, group="nothing", protocols=[])
        assert refused.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert "nothing" not in coordinator.groups
        assert coordinator.list_groups() == (E.NONE, [])
    run(tmp_path, scenario)


def test_durable_commit_counts_once_its_group_commit_fsync_completes(tmp_path):
    """flush.messages=1: the commit shares the produce path's syncer; the
    offsets are fetchable only once the fsync completed, and a commit that
    nobody waits for is fsynced inline, as before."""
    async def scenario(node, coordinator):
        loop = asyncio.get_running_loop()
        syncer = GroupCommitSyncer(IoUringBackend(loop), loop, journal_dir=tmp_path,
                                   journal_bytes=4 << 20)
        await syncer.journal.prepare()
        coordinator.manager.syncer = syncer
        try:
            syncs: list = []
            errors = coordinator.commit_offsets("g", "", None, -1, {("t", 0): offset(5)}, syncs)
            assert errors == {("t", 0): E.NONE}
            [(future, partitions)] = syncs
            assert partitions == [("t", 0)] and not future.done()
            assert coordinator.fetch_offsets("g", [("t", 0)])[1] == [("t", 0, None)]
            await future
            assert coordinator.fetch_offsets("g", [("t", 0)])[1][0][2].offset == 5
            assert syncer.journal.rounds >= 1  # through the journal, not an inline fsync
            index = coordinator.manager.partition_for("g")
            partition = node.replica_manager.get(OFFSETS_TOPIC, index)
            assert partition.high_watermark == partition.log.log_end_offset
            # No syncs list: the append is flushed before the call returns.
            coordinator.commit_offsets("g", "", None, -1, {("t", 1): offset(6)})
            assert coordinator.fetch_offsets("g", [("t", 1)])[1][0][2].offset == 6
            assert partition.log.recovery_point == partition.log.log_end_offset
        finally:
            await syncer.close()
    run(tmp_path, scenario, **{"log.flush.interval.messages": 1})


def test_durable_commit_whose_fsync_fails_is_not_fetchable(tmp_path):
    async def scenario(node, coordinator):
        loop = asyncio.get_running_loop()
        syncer = GroupCommitSyncer(IoUringBackend(loop), loop)  # per-file rounds, no journal
        coordinator.manager.syncer = syncer
        try:
            syncs: list = []
            coordinator.commit_offsets("g", "", None, -1, {("t", 0): offset(5)}, syncs)
            [(future, _)] = syncs
            index = coordinator.manager.partition_for("g")
            segment = node.replica_manager.get(OFFSETS_TOPIC, index).log.active_segment
            with segment_fd_on_a_pipe(segment):
                await asyncio.sleep(0)  # the round took (a dup of) the pipe
            with pytest.raises((LogError, StoreError)) as failure:
                await future
            assert sync_error_code(failure.value.error_code) == E.NOT_COORDINATOR
            assert coordinator.fetch_offsets("g", [("t", 0)])[1] == [("t", 0, None)]
        finally:
            await syncer.close()
    run(tmp_path, scenario, **{"log.flush.interval.messages": 1})

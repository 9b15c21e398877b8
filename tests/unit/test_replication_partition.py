"""A partition's replication state without sockets: a leader and its
followers' fetch offsets, the high watermark, ISR changes proposed to the
controller, the acks=all purgatory, and a follower that copies a leader's
batches and later leads. Real logs in a temp dir; the controller's answers
are given by the test, as the AlterPartition response would."""
from __future__ import annotations

import asyncio

import pytest

from kcore.clock import SYSTEM_CLOCK
from kcore.config import BrokerConfig
from kcore.log.log import Log
from kcore.metadata import PartitionState
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.partition import Partition, PartitionError
from tests.support.batches import make_batch
from tests.support.clock import HOUR_S, ManualClock
from tests.support.log import read_slices

CONFIGS = {**BrokerConfig().topic_defaults(), "min.insync.replicas": 2}


def leader_partition(tmp_path, name="t-0", replicas=(1, 2, 3), isr=(1, 2, 3), epoch=1,
                     lag_ms=30_000, clock=SYSTEM_CLOCK) -> tuple[Partition, list]:
    proposals: list = []
    partition = Partition("t", 0, Log.open(tmp_path / name), dict(CONFIGS), broker_id=1, clock=clock)
    partition.replica_lag_time_max_ms = lag_ms
    partition.isr_changes = lambda p, new_isr: proposals.append(new_isr)
    partition.make_leader(PartitionState("t", 0, 1, epoch, tuple(isr), tuple(replicas), 0, 1))
    return partition, proposals


def produce(partition, records=2, acks=-1, **kwargs):
    return partition.append_records_to_leader(memoryview(make_batch(records, **kwargs)), acks)


def run(coroutine):
    return asyncio.run(coroutine)


def test_high_watermark_is_the_smallest_log_end_over_the_isr(tmp_path):
    async def main():
        partition, _ = leader_partition(tmp_path)
        result = produce(partition, 3)
        assert partition.high_watermark == 0 and result.required_offset == 3
        waiter = partition.wait_for_replicas(result.required_offset)
        partition.update_follower_fetch_state(2, 3)
        assert partition.high_watermark == 0 and not waiter.done()
        partition.update_follower_fetch_state(3, 2)
        assert partition.high_watermark == 2 and not waiter.done()
        partition.update_follower_fetch_state(3, 3)
        assert partition.high_watermark == 3 and await waiter == E.NONE
        assert partition.read(0, 1 << 20, False, True)  # consumers see it now
    run(main())


def test_a_fetch_from_a_broker_outside_the_assignment_changes_nothing(tmp_path):
    async def main():
        partition, proposals = leader_partition(tmp_path, replicas=(1, 2), isr=(1,))
        produce(partition, 2, acks=1)
        assert partition.update_follower_fetch_state(9, 2) == E.NOT_LEADER_OR_FOLLOWER
        assert partition.high_watermark == 2 and proposals == [] and partition.isr == [1]
    run(main())


def test_a_lagging_follower_is_proposed_out_and_back_in(tmp_path):
    async def main():
        partition, proposals = leader_partition(tmp_path, lag_ms=100)
        produce(partition, 2)
        await asyncio.sleep(0.15)
        partition.update_follower_fetch_state(2, 2)
        partition.update_follower_fetch_state(3, 0)
        # Follower 3 fetched, but has not reached the log end since the
        # leadership began, longer ago than the lag; follower 2 just did.
        partition.maybe_shrink_isr(now=partition._followers[2].last_caught_up_ms + 10)
        assert proposals == [[1, 2]]
        partition.on_isr_change(E.NONE, 1, [1, 2], 1)
        assert partition.isr == [1, 2] and partition.partition_epoch == 1
        assert partition.high_watermark == 2  # the ISR is {1, 2}: both have 2
        produce(partition, 1)
        partition.update_follower_fetch_state(3, 2)  # at the HW, not at the log end
        assert proposals[-1] == [1, 2, 3]           # reaching the HW is enough to rejoin
        # While the change is pending, the HW counts the joining follower.
        partition.update_follower_fetch_state(2, 3)
        assert partition.high_watermark == 2
        partition.update_follower_fetch_state(3, 3)
        assert partition.high_watermark == 3
        partition.on_isr_change(E.NONE, 1, [1, 2, 3], 2)
        assert partition.isr == [1, 2, 3]
    run(main())


def test_a_caught_up_follower_whose_broker_is_not_alive_is_not_proposed_in(tmp_path):
    """The leader side of ISR eligibility: a follower the metadata cache
    does not name as a live broker stays out, and the HW does not wait on
    it; once the cache names it again, catching up lets it back in."""
    async def main():
        partition, proposals = leader_partition(tmp_path, isr=(1, 2))
        live = {1, 2}
        partition.is_live_broker = live.__contains__
        produce(partition, 2, acks=1)
        partition.update_follower_fetch_state(2, 2)
        partition.update_follower_fetch_state(3, 2)
        assert proposals == [] and partition.high_watermark == 2
        produce(partition, 2, acks=1)
        partition.update_follower_fetch_state(2, 4)
        assert partition.high_watermark == 4  # a pending [1, 2, 3] would hold it at 2
        live.add(3)
        partition.update_follower_fetch_state(3, 4)
        assert proposals == [[1, 2, 3]]
    run(main())


def test_a_refused_isr_change_is_forgotten_and_proposed_again(tmp_path):
    async def main():
        partition, proposals = leader_partition(tmp_path, lag_ms=100)
        partition.update_follower_fetch_state(2, 0)
        later = partition._followers[3].last_caught_up_ms + 101
        partition.maybe_shrink_isr(now=later)
        partition.maybe_shrink_isr(now=later)
        assert len(proposals) == 1  # one change in flight at a time
        partition.on_isr_change(E.INVALID_UPDATE_VERSION, -1, (), -1)
        assert partition.isr == [1, 2, 3]
        partition.maybe_shrink_isr(now=later)
        assert len(proposals) == 2
    run(main())


def test_a_partition_created_leading_at_epoch_0_keeps_its_isr_until_the_lag_passes(tmp_path):
    """A new topic's partition is led at epoch 0, the epoch a fresh
    Partition starts with: its followers count as caught up from then,
    not from the start of the clock."""
    async def main():
        clock = ManualClock()
        clock.advance(60.0)  # the broker has been up a minute
        partition, proposals = leader_partition(tmp_path, epoch=0, lag_ms=10_000, clock=clock)
        partition.maybe_shrink_isr()
        assert proposals == [] and partition.isr == [1, 2, 3]
        clock.advance(10.001)  # nobody fetched for longer than the lag
        partition.maybe_shrink_isr()
        assert proposals == [[1]]
    run(main())


@pytest.mark.parametrize("wall_step_s", [HOUR_S, -HOUR_S], ids=["forward-1h", "back-1h"])
def test_a_wall_clock_step_neither_drops_a_follower_nor_keeps_a_silent_one(tmp_path, wall_step_s):
    """replica.lag.time.max.ms runs on the monotonic clock: an hour's step
    of the wall clock drops no follower that keeps up, and a follower that
    stopped fetching still leaves once the lag really passed."""
    async def main():
        clock = ManualClock()
        partition, proposals = leader_partition(tmp_path, lag_ms=10_000, clock=clock)
        produce(partition, 2)
        for replica in (2, 3):
            partition.update_follower_fetch_state(replica, 2)
        clock.step(wall_step_s)
        partition.maybe_shrink_isr()
        assert proposals == [] and partition.isr == [1, 2, 3]
        for _ in range(10):  # 10 s: follower 2 fetches, follower 3 is silent
            clock.advance(1.0)
            partition.update_follower_fetch_state(2, 2)
            partition.maybe_shrink_isr()
        assert proposals == []  # 10 s is the limit, not past it
        clock.advance(0.001)
        partition.maybe_shrink_isr()
        assert proposals == [[1, 2]]
    run(main())


def test_min_insync_replicas_before_and_after_the_append(tmp_path):
    async def main():
        partition, _ = leader_partition(tmp_path, replicas=(1, 2), isr=(1,))
        try:
            produce(partition, 1)
            raise AssertionError("acks=all with ISR [1] < min.insync.replicas 2 was appended")
        except PartitionError as exc:
            assert exc.error_code == E.NOT_ENOUGH_REPLICAS
        assert partition.log.log_end_offset == 0
        partition.on_isr_change(E.NONE, 1, [1, 2], 1)
        result = produce(partition, 1)
        waiter = partition.wait_for_replicas(result.required_offset)
        partition.on_isr_change(E.NONE, 1, [1], 2)  # follower 2 dropped meanwhile
        assert await waiter == E.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    run(main())


def test_losing_the_leadership_answers_waiting_produces(tmp_path):
    async def main():
        partition, _ = leader_partition(tmp_path)
        waiter = partition.wait_for_replicas(produce(partition, 1).required_offset)
        partition.make_follower(PartitionState("t", 0, 2, 2, (2, 3), (1, 2, 3), 1, 2))
        assert await waiter == E.NOT_LEADER_OR_FOLLOWER
        try:
            produce(partition, 1)
            raise AssertionError("a follower took a produce")
        except PartitionError as exc:
            assert exc.error_code == E.NOT_LEADER_OR_FOLLOWER
    run(main())


def test_a_follower_copies_batches_with_their_epochs_and_dedups_retries_as_leader(tmp_path):
    async def main():
        leader, _ = leader_partition(tmp_path, name="t-0", epoch=4)
        first = produce(leader, 2, producer_id=7, producer_epoch=0, base_sequence=0)
        second = produce(leader, 3, producer_id=7, producer_epoch=0, base_sequence=2)
        copied = read_slices(leader.read_for_follower(0, 1 << 20))
        follower = Partition("t", 0, Log.open(tmp_path / "f" / "t-0"), dict(CONFIGS), broker_id=2)
        follower.make_follower(PartitionState("t", 0, 1, 4, (1, 2), (1, 2), 0, 1))
        follower.append_records_as_follower(memoryview(copied))
        follower.update_follower_high_watermark(5, 0)
        assert follower.log.log_end_offset == 5 and follower.high_watermark == 5
        assert follower.log.leader_epoch_cache.latest_epoch == 4
        follower.isr_changes = lambda p, isr: None
        follower.make_leader(PartitionState("t", 0, 2, 5, (2,), (1, 2), 1, 2))
        follower.configs = {**CONFIGS, "min.insync.replicas": 1}
        retry = produce(follower, 3, producer_id=7, producer_epoch=0, base_sequence=2)
        assert retry.duplicate and retry.base_offset == second.base_offset == 2
        assert first.base_offset == 0 and follower.log.log_end_offset == 5
        assert follower.end_offset_for_epoch(4) == (4, 5)
    run(main())


def test_truncation_rebuilds_the_producer_state_and_the_epoch_cache(tmp_path):
    async def main():
        partition = Partition("t", 0, Log.open(tmp_path / "t-0"), dict(CONFIGS), broker_id=2)
        partition.make_follower(PartitionState("t", 0, 1, 1, (1, 2), (1, 2), 0, 1))
        for epoch, offset, sequence in ((1, 0, 0), (3, 2, 2)):
            batch = make_batch(2, base_offset=offset, partition_leader_epoch=epoch,
                               producer_id=5, producer_epoch=0, base_sequence=sequence)
            partition.append_records_as_follower(memoryview(batch))
        assert partition.end_offset_for_epoch(1) == (1, 2)
        partition.truncate_to(2)
        assert partition.log.log_end_offset == 2
        assert partition.log.leader_epoch_cache.latest_epoch == 1
        assert partition.producers.producers[5].last_seq == 1
    run(main())


def test_producer_state_loads_on_first_use_and_is_snapshotted_only_when_loaded(tmp_path):
    async def main():
        partition, _ = leader_partition(tmp_path, replicas=(1,), isr=(1,))
        produce(partition, 2, acks=1, producer_id=7, producer_epoch=0, base_sequence=0)
        partition.snapshot_producer_state()
        partition.log.close()
        reopened = Partition("t", 0, Log.open(tmp_path / "t-0", clean_shutdown=True),
                             dict(CONFIGS), broker_id=1)
        assert not reopened._producers_loaded
        reopened.snapshot_producer_state()  # untouched: nothing to write
        assert not reopened._producers_loaded
        retry = produce(reopened, 2, acks=1, producer_id=7, producer_epoch=0, base_sequence=0)
        assert retry.duplicate and retry.base_offset == 0
        assert reopened._producers_loaded
        reopened.log.close()
    run(main())


def test_first_load_replays_only_up_to_the_log_end_at_open(tmp_path):
    """Batches appended after open without a producer id change no state:
    the first load (a fetch's LSO, here) replays the headers written before
    open and none of the plain ones after it, and still knows the producer."""
    async def main():
        partition, _ = leader_partition(tmp_path, replicas=(1,), isr=(1,))
        produce(partition, 2, acks=1, producer_id=7, producer_epoch=0, base_sequence=0)
        partition.log.close()  # no snapshot: the load must replay offsets 0-1
        reopened = Partition("t", 0, Log.open(tmp_path / "t-0"), dict(CONFIGS), broker_id=1)
        for _ in range(50):
            produce(reopened, 10, acks=1)  # no producer id: state not loaded
        assert not reopened._producers_loaded
        replayed: list[int] = []
        batch_headers = reopened.log.batch_headers
        def recording(*bounds):
            for header, data in batch_headers(*bounds):
                replayed.append(header.base_offset)
                yield header, data
        reopened.log.batch_headers = recording
        assert reopened.last_stable_offset == reopened.high_watermark == 502
        assert replayed == [0]
        assert reopened.producers.producers[7].last_seq == 1
        retry = produce(reopened, 2, acks=1, producer_id=7, producer_epoch=0, base_sequence=0)
        assert retry.duplicate and retry.base_offset == 0
        reopened.log.close()
    run(main())

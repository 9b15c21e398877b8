"""flush.messages=1 on a Partition: the high watermark (what consumers and
acks see) stays behind synced data, and a failed fsync truncates the
unsynced tail so that retries append afresh."""
from __future__ import annotations

import asyncio

import pytest

from kcore.config import BrokerConfig
from kcore.log.durability import GroupCommitSyncer
from kcore.log.errors import LogError
from kcore.log.log import Log
from kcore.log.sync_backends import IoUringBackend, ThreadBackend
from kcore.replication.partition import Partition
from tests.support.batches import make_batch
from tests.support.log import segment_fd_on_a_pipe

PRODUCER_ID = 7


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def make_partition(tmp_path, flush_messages: int = 1) -> Partition:
    configs = BrokerConfig({"log.flush.interval.messages": str(flush_messages)}).topic_defaults()
    log = Log.open(tmp_path / "t-0")
    return Partition("t", 0, log, configs, broker_id=0)


def idempotent_batch(sequence: int) -> memoryview:
    return memoryview(make_batch(2, producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=sequence))


def make_syncer(kind: str) -> GroupCommitSyncer:
    loop = asyncio.get_running_loop()
    return GroupCommitSyncer(IoUringBackend(loop) if kind == "io_uring" else ThreadBackend(loop), loop)


@pytest.mark.parametrize("kind", ["io_uring", "thread"])
def test_high_watermark_and_reads_wait_for_the_fsync(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        partition = make_partition(tmp_path)
        result = partition.append_records_to_leader(idempotent_batch(0), -1, syncer)
        assert result.durable is not None and not result.durable.done()
        assert partition.high_watermark == 0 and partition.log.log_end_offset == 2
        assert partition.read(0, 1 << 20, False, True) == []
        assert await result.durable == 2
        assert partition.high_watermark == 2
        assert len(partition.read(0, 1 << 20, False, True)) == 1
        partition.close()
        await syncer.close()
    run(main())


def test_acks_zero_data_becomes_visible_after_the_sync_without_a_waiter(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        partition = make_partition(tmp_path)
        waiter = partition.data_waiter()
        partition.append_records_to_leader(memoryview(make_batch(3)), 0, syncer)
        assert partition.high_watermark == 0
        await asyncio.wait_for(waiter, 5)
        assert partition.high_watermark == 3
        partition.close()
        await syncer.close()
    run(main())


def test_retry_of_an_unsynced_batch_waits_for_the_same_fsync(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        partition = make_partition(tmp_path)
        first = partition.append_records_to_leader(idempotent_batch(0), -1, syncer)
        retry = partition.append_records_to_leader(idempotent_batch(0), -1, syncer)
        assert retry.duplicate and retry.base_offset == 0
        assert retry.durable is not None
        await asyncio.gather(first.durable, retry.durable)
        assert partition.high_watermark == 2 == partition.log.log_end_offset
        again = partition.append_records_to_leader(idempotent_batch(0), -1, syncer)
        assert again.duplicate and again.durable is None  # synced already: answer at once
        partition.close()
        await syncer.close()
    run(main())


def test_failed_fsync_answers_storage_error_and_truncates_so_the_retry_appends_again(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        partition = make_partition(tmp_path)
        await partition.append_records_to_leader(idempotent_batch(0), -1, syncer).durable
        failed = partition.append_records_to_leader(idempotent_batch(2), -1, syncer)
        with segment_fd_on_a_pipe(partition.log.active_segment):
            await asyncio.sleep(0)  # the round took (a dup of) the pipe
        with pytest.raises(LogError) as error:
            await failed.durable
        assert error.value.error_code == 56
        assert partition.log.log_end_offset == 2 == partition.high_watermark
        retried = partition.append_records_to_leader(idempotent_batch(2), -1, syncer)
        assert not retried.duplicate and retried.base_offset == 2
        assert await retried.durable == 4
        assert partition.high_watermark == 4
        partition.close()
        await syncer.close()
    run(main())


def test_without_a_syncer_the_append_is_synced_before_it_returns(tmp_path):
    async def main():
        partition = make_partition(tmp_path)
        result = partition.append_records_to_leader(memoryview(make_batch(4)), -1)
        assert result.durable is None
        assert partition.high_watermark == 4 == partition.log.recovery_point
        partition.close()
    run(main())


def test_page_cache_mode_exposes_appends_at_once_and_never_syncs_them(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        partition = make_partition(tmp_path, flush_messages=2**63 - 1)
        result = partition.append_records_to_leader(memoryview(make_batch(4)), -1, syncer)
        assert result.durable is None
        assert partition.high_watermark == 4
        assert partition.log.recovery_point == 0 and syncer.rounds == 0
        partition.close()
        await syncer.close()
    run(main())


def test_reopening_in_fsync_mode_syncs_what_a_crash_left_before_exposing_it(tmp_path):
    partition = make_partition(tmp_path, flush_messages=2**63 - 1)
    partition.append_records_to_leader(memoryview(make_batch(5)), -1)
    assert partition.log.recovery_point == 0
    partition.close()
    reopened = make_partition(tmp_path, flush_messages=1)
    assert reopened.high_watermark == 5 == reopened.log.recovery_point
    reopened.close()


@pytest.mark.parametrize("kind", ["io_uring", "thread"])
def test_a_follower_with_flush_messages_1_syncs_before_its_high_watermark_moves(tmp_path, kind):
    """A follower's copy is durable before the fetcher reports it (it awaits
    the future returned here), and the leader's HW it learns never passes
    what it has synced."""
    from kcore.metadata import PartitionState

    async def main():
        syncer = make_syncer(kind)
        partition = make_partition(tmp_path)
        partition.make_follower(PartitionState("t", 0, 1, 3, (0, 1), (0, 1), 0, 1))
        copied = make_batch(2, base_offset=0, partition_leader_epoch=3)
        durable = partition.append_records_as_follower(memoryview(copied), syncer)
        assert durable is not None and not durable.done()
        partition.update_follower_high_watermark(2, 0)
        assert partition.high_watermark == 0  # not synced yet
        await durable
        partition.update_follower_high_watermark(2, 0)
        assert partition.high_watermark == 2 and partition.log.leader_epoch_cache.latest_epoch == 3
        partition.close()
        await syncer.close()
    run(main())

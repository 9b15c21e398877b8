"""DeleteRecords on one partition without sockets: the leader's log start
offset moves at once, the low watermark follows what the followers' fetches
report (live brokers only), waiting DeleteRecords are answered when it
reaches their offset or the leadership moves, a follower takes its
leader's start offset and drops the segments below it, and a transaction
whose start was deleted holds the last stable offset at the log start.
Real logs in a temp dir."""
from __future__ import annotations

import asyncio

import pytest

from kcore.config import BrokerConfig
from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.metadata import PartitionState
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.partition import Partition, PartitionError
from tests.support.batches import make_batch
from tests.support.log import read_slices

CONFIGS = {**BrokerConfig().topic_defaults(), "min.insync.replicas": 1}
TRANSACTIONAL = 0x10
ONE = len(make_batch(1, value_bytes=100))


def leader(tmp_path, replicas=(1, 2, 3)) -> Partition:
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE, file_delete_delay_ms=0))
    partition = Partition("t", 0, log, dict(CONFIGS), broker_id=1)
    partition.isr_changes = lambda p, new_isr: None
    partition.make_leader(PartitionState("t", 0, 1, 1, tuple(replicas), tuple(replicas), 0, 1))
    return partition


def produce(partition, count, **batch) -> None:
    for _ in range(count):
        partition.append_records_to_leader(memoryview(make_batch(1, value_bytes=100, **batch)), 1)


def fetch(partition, follower, log_start_offset=0) -> None:
    """Follower ``follower`` fetches from the leader's log end, reporting ``log_start_offset``."""
    partition.update_follower_fetch_state(follower, partition.log.log_end_offset, log_start_offset)


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_answer_waits_until_every_live_follower_reports_the_new_start(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 6)
        fetch(partition, 2)
        fetch(partition, 3)
        assert (partition.high_watermark, partition.low_watermark) == (6, 0)
        partition.delete_records(4)
        assert partition.log.log_start_offset == 4 and partition.low_watermark == 0
        assert [s.base_offset for s in partition.log.segments] == [4]  # [0, 2) and [2, 4) went
        with pytest.raises(PartitionError) as raised:
            partition.read(3, 1 << 20, False, True)
        assert raised.value.error_code == E.OFFSET_OUT_OF_RANGE
        assert partition.log_start_offset == 4  # ListOffsets(earliest) answers it
        waiter = partition.wait_for_low_watermark(4)
        fetch(partition, 2, 4)
        assert partition.low_watermark == 0 and not waiter.done()
        fetch(partition, 3, 4)
        assert await waiter == E.NONE and partition.low_watermark == 4
        assert partition.wait_for_low_watermark(4) is None
    run(main())


def test_a_follower_on_a_dead_broker_holds_nothing_back(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 4)
        fetch(partition, 2)
        fetch(partition, 3)
        partition.is_live_broker = lambda broker_id: broker_id != 3
        partition.delete_records(2)
        waiter = partition.wait_for_low_watermark(2)
        fetch(partition, 2, 2)
        assert await waiter == E.NONE and partition.low_watermark == 2
    run(main())


def test_a_new_leadership_forgets_the_followers_start_offsets_and_a_lost_one_answers_waiters(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 4)
        fetch(partition, 2, 0)
        fetch(partition, 3, 0)
        partition.delete_records(3)
        waiter = partition.wait_for_low_watermark(3)
        partition.make_leader(PartitionState("t", 0, 1, 2, (1, 2, 3), (1, 2, 3), 1, 2))
        assert partition.low_watermark == -1 and not waiter.done()  # unknown until they fetch
        partition.make_follower(PartitionState("t", 0, 2, 3, (2, 3), (1, 2, 3), 2, 3))
        assert await waiter == E.NOT_LEADER_OR_FOLLOWER
        assert partition.log.log_start_offset == 3  # the move stays
    run(main())


def test_a_follower_takes_its_leaders_start_offset_and_drops_the_segments_below(tmp_path):
    async def main():
        source = leader(tmp_path / "leader")
        produce(source, 6)
        # A follower's read stops at a segment's end (two batches here).
        copied = b"".join(read_slices(source.read_for_follower(offset, 1 << 20))
                          for offset in (0, 2, 4))
        log = Log.open(tmp_path / "follower" / "t-0", LogConfig(segment_bytes=2 * ONE, file_delete_delay_ms=0))
        follower = Partition("t", 0, log, dict(CONFIGS), broker_id=2)
        follower.make_follower(PartitionState("t", 0, 1, 1, (1, 2, 3), (1, 2, 3), 0, 1))
        for position in range(0, len(copied), ONE):  # a segment holds two batches
            follower.append_records_as_follower(memoryview(bytearray(copied[position:position + ONE])))
        follower.update_follower_high_watermark(6, 5)
        assert follower.log.log_start_offset == 5
        assert [s.base_offset for s in follower.log.segments] == [4]
        follower.update_follower_high_watermark(6, 3)  # a start never moves back
        assert follower.log.log_start_offset == 5
    run(main())


def test_a_transaction_whose_start_was_deleted_holds_the_lso_at_the_log_start(tmp_path):
    async def main():
        partition = leader(tmp_path, replicas=(1,))
        produce(partition, 1, producer_id=7, producer_epoch=0, base_sequence=0, attributes=TRANSACTIONAL)
        produce(partition, 3)
        assert (partition.high_watermark, partition.last_stable_offset) == (4, 0)
        partition.delete_records(2)
        assert partition.last_stable_offset == 2
        assert partition.read(2, 1 << 20, True, True) == []  # still open: nothing stable past it
    run(main())

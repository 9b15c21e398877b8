"""Transactions on one partition without sockets: markers on the leader and
on a follower, the last stable offset while a transaction is open and
while its marker is not on the ISR yet (Kafka's unreplicated
transactions), the aborted-transaction index a read_committed fetch gets,
marker fencing, and all of it after the partition is opened again."""
from __future__ import annotations

import asyncio
import time

import pytest

from kcore.config import BrokerConfig
from kcore.log.log import Log
from kcore.log.txn_index import AbortedTxn
from kcore.metadata import PartitionState
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.partition import Partition, PartitionError
from tests.support.batches import make_batch
from tests.support.log import read_slices

CONFIGS = {**BrokerConfig().topic_defaults(), "min.insync.replicas": 2}
TRANSACTIONAL = 0x10


def leader(tmp_path, name="t-0", isr=(1, 2)) -> Partition:
    partition = Partition("t", 0, Log.open(tmp_path / name), dict(CONFIGS), broker_id=1)
    partition.isr_changes = lambda p, new_isr: None
    partition.make_leader(PartitionState("t", 0, 1, 1, tuple(isr), (1, 2), 0, 1))
    return partition


def produce(partition, records, producer_id=-1, epoch=-1, sequence=-1, transactional=False):
    return partition.append_records_to_leader(memoryview(make_batch(
        records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
        attributes=TRANSACTIONAL if transactional else 0)), -1)


def replicate(partition) -> None:
    """Follower 2 catches up with the leader's log end."""
    partition.update_follower_fetch_state(2, partition.log.log_end_offset)


def run(coroutine):
    return asyncio.run(coroutine)


def test_open_transaction_holds_the_lso_at_its_first_offset(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2)
        produce(partition, 3, producer_id=7, epoch=0, sequence=0, transactional=True)
        produce(partition, 1)
        replicate(partition)
        assert (partition.high_watermark, partition.last_stable_offset) == (6, 2)
        assert read_slices(partition.read(0, 1 << 20, True, True))  # the records below it
        assert partition.read(2, 1 << 20, True, True) == []
    run(main())


def test_a_marker_not_yet_on_the_isr_keeps_the_transaction_unstable(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 3, producer_id=7, epoch=0, sequence=0, transactional=True)
        replicate(partition)
        result = partition.append_txn_marker(7, 0, coordinator_epoch=1, commit=True)
        assert result.base_offset == 3 and partition.log.log_end_offset == 4
        # The HW (3) is past the transaction's data but not its marker.
        assert (partition.high_watermark, partition.last_stable_offset) == (3, 0)
        replicate(partition)
        assert (partition.high_watermark, partition.last_stable_offset) == (4, 4)
        assert partition.producers.first_unstable_offset() is None
    run(main())


def test_lso_is_the_oldest_of_open_and_unreplicated_transactions(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=0, sequence=0, transactional=True)   # 0-1
        produce(partition, 2, producer_id=8, epoch=0, sequence=0, transactional=True)   # 2-3
        replicate(partition)
        partition.append_txn_marker(8, 0, 1, commit=True)                                # 4
        replicate(partition)
        assert partition.last_stable_offset == 0  # producer 7 is still open
        partition.append_txn_marker(7, 0, 1, commit=False)                               # 5
        assert partition.last_stable_offset == 0  # its abort is not on the ISR
        replicate(partition)
        assert partition.last_stable_offset == partition.high_watermark == 6
    run(main())


def test_an_abort_is_indexed_with_its_range_and_the_lso_after_it(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=0, sequence=0, transactional=True)   # 0-1
        produce(partition, 2, producer_id=8, epoch=0, sequence=0, transactional=True)   # 2-3
        partition.append_txn_marker(7, 0, 1, commit=False)                               # 4
        replicate(partition)
        # Producer 8's transaction is open: the LSO after the abort is its start.
        assert partition.log.collect_aborted_txns(0, 5) == [AbortedTxn(7, 0, 4, 2)]
        partition.append_txn_marker(8, 0, 1, commit=True)                                # 5
        replicate(partition)
        assert partition.log.collect_aborted_txns(0, partition.last_stable_offset) == [AbortedTxn(7, 0, 4, 2)]
        assert partition.log.collect_aborted_txns(5, 6) == []  # the abort ended before offset 5
    run(main())


def test_a_commit_is_not_indexed(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=0, sequence=0, transactional=True)
        partition.append_txn_marker(7, 0, 1, commit=True)
        assert partition.log.collect_aborted_txns(0, 10) == []
    run(main())


def test_a_marker_for_a_producer_without_a_transaction_here_is_written_and_changes_nothing(tmp_path):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2)
        partition.append_txn_marker(9, 0, 1, commit=False)
        replicate(partition)
        assert partition.last_stable_offset == partition.high_watermark == 3
        assert partition.log.collect_aborted_txns(0, 3) == []
    run(main())


@pytest.mark.parametrize(("producer_epoch", "coordinator_epoch", "error"), [
    (0, 3, E.INVALID_PRODUCER_EPOCH), (1, 2, E.TRANSACTION_COORDINATOR_FENCED)])
def test_a_stale_marker_is_refused_and_writes_nothing(tmp_path, producer_epoch, coordinator_epoch, error):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=1, sequence=0, transactional=True)
        partition.append_txn_marker(7, 1, 3, commit=True)
        produce(partition, 1, producer_id=7, epoch=1, sequence=2, transactional=True)
        end = partition.log.log_end_offset
        with pytest.raises(PartitionError) as refused:
            partition.append_txn_marker(7, producer_epoch, coordinator_epoch, commit=False)
        assert refused.value.error_code == error
        assert partition.log.log_end_offset == end
        assert partition.producers.first_unstable_offset() == 3  # still open
    run(main())


def test_a_marker_under_a_newer_epoch_fences_the_producers_older_batches(tmp_path):
    """A timed-out transaction aborted by the coordinator: the marker's
    epoch is the fenced one, and the zombie's next batch is refused."""
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=4, sequence=0, transactional=True)
        partition.append_txn_marker(7, 5, 1, commit=False)
        with pytest.raises(PartitionError) as refused:
            produce(partition, 1, producer_id=7, epoch=4, sequence=2, transactional=True)
        assert refused.value.error_code in (E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED)
    run(main())


def test_markers_need_the_min_isr_and_the_leadership(tmp_path):
    async def main():
        short = leader(tmp_path, "short-0", isr=(1,))
        with pytest.raises(PartitionError) as refused:
            short.append_txn_marker(7, 0, 1, commit=True)
        assert refused.value.error_code == E.NOT_ENOUGH_REPLICAS
        follower = Partition("t", 0, Log.open(tmp_path / "f-0"), dict(CONFIGS), broker_id=2)
        follower.make_follower(PartitionState("t", 0, 1, 1, (1, 2), (1, 2), 0, 1))
        with pytest.raises(PartitionError) as refused:
            follower.append_txn_marker(7, 0, 1, commit=True)
        assert refused.value.error_code == E.NOT_LEADER_OR_FOLLOWER
    run(main())


def test_a_follower_copying_markers_has_the_leaders_lso_and_aborted_index(tmp_path):
    async def main():
        source = leader(tmp_path)
        produce(source, 2, producer_id=7, epoch=0, sequence=0, transactional=True)      # 0-1
        produce(source, 2, producer_id=8, epoch=0, sequence=0, transactional=True)      # 2-3
        source.append_txn_marker(7, 0, 1, commit=False)                                  # 4
        produce(source, 1)                                                               # 5
        replicate(source)
        follower = Partition("t", 0, Log.open(tmp_path / "f" / "t-0"), dict(CONFIGS), broker_id=2)
        follower.make_follower(PartitionState("t", 0, 1, 1, (1, 2), (1, 2), 0, 1))
        # The abort marker starts a segment and a follower's read stops at
        # a segment's end: fetch on from the copy's log end, as a fetcher does.
        while follower.log_end_offset < source.log_end_offset:
            copied = read_slices(source.read_for_follower(follower.log_end_offset, 1 << 20))
            follower.append_records_as_follower(memoryview(copied))
        follower.update_follower_high_watermark(source.high_watermark, 0)
        assert follower.last_stable_offset == source.last_stable_offset == 2
        assert follower.log.collect_aborted_txns(0, 6) == source.log.collect_aborted_txns(0, 6)
        # Leading now, it ends producer 8's transaction itself.
        follower.isr_changes = lambda p, isr: None
        follower.make_leader(PartitionState("t", 0, 2, 2, (1, 2), (1, 2), 1, 2))
        follower.append_txn_marker(8, 0, 2, commit=True)
        follower.update_follower_fetch_state(1, follower.log.log_end_offset)
        assert follower.last_stable_offset == follower.high_watermark == 7
    run(main())


@pytest.mark.parametrize("snapshot", [True, False], ids=["with-snapshot", "replayed"])
def test_transactions_survive_reopening_the_partition(tmp_path, snapshot):
    async def main():
        partition = leader(tmp_path)
        produce(partition, 2, producer_id=7, epoch=0, sequence=0, transactional=True)   # 0-1
        partition.append_txn_marker(7, 0, 1, commit=False)                               # 2
        produce(partition, 2, producer_id=8, epoch=0, sequence=0, transactional=True)   # 3-4
        replicate(partition)
        if snapshot:
            partition.close()
        else:
            partition.log.close()  # a crash: no snapshot of the producer state
        again = leader(tmp_path)
        replicate(again)
        assert again.log.log_end_offset == 5
        assert again.last_stable_offset == 3  # producer 8 is still open
        assert again.log.collect_aborted_txns(0, 5) == [AbortedTxn(7, 0, 2, 3)]
        with pytest.raises(PartitionError) as refused:  # coordinator epochs are remembered
            again.append_txn_marker(7, 0, 0, commit=True)
        assert refused.value.error_code == E.TRANSACTION_COORDINATOR_FENCED
        again.append_txn_marker(8, 0, 1, commit=True)
        replicate(again)
        assert again.last_stable_offset == again.high_watermark == 6
    run(main())


def test_an_abort_whose_index_cannot_be_written_still_hides_the_aborted_records(tmp_path):
    """A full disk took the .txnindex write but not the marker's (the
    marker fit in the segment's last page): read_committed fetches must
    still skip the aborted records, and the index reaches the disk at the
    next flush once it can (seen under a follower disk-full fault)."""
    async def main():
        partition = leader(tmp_path)
        # Stamped now, so that the marker joins this segment (no time roll).
        partition.append_records_to_leader(memoryview(make_batch(
            2, producer_id=7, producer_epoch=0, base_sequence=0, attributes=TRANSACTIONAL,
            timestamp=int(time.time() * 1000))), -1)
        replicate(partition)
        # The index write fails for real: a directory holds its place.
        assert partition.log.active_segment.txn_index.entries == []   # read before the fault
        index_path = partition.log.dir / "00000000000000000000.txnindex"
        index_path.mkdir()
        partition.append_txn_marker(7, 0, 0, commit=False)
        replicate(partition)
        assert partition.last_stable_offset == 3
        assert partition.log.collect_aborted_txns(0, 3) == [AbortedTxn(7, 0, 2, 3)]
        index_path.rmdir()
        partition.log.flush()
        assert Log.open(partition.log.dir).collect_aborted_txns(0, 3) == [AbortedTxn(7, 0, 2, 3)]
    run(main())


def test_a_late_batch_without_sequence_from_before_a_fence_is_refused(tmp_path):
    """A transactional batch without sequence numbers (the group
    coordinator's TxnOffsetCommit records) from an epoch that an abort
    marker fenced must not reopen a transaction: seen in the fault suite as
    the offsets of an aborted transaction taking effect with the producer's
    next commit, and records skipped by an exactly-once group."""
    def offsets_batch(epoch):
        return memoryview(make_batch(1, producer_id=7, producer_epoch=epoch, base_sequence=-1,
                                     attributes=TRANSACTIONAL, timestamp=int(time.time() * 1000)))

    async def main():
        partition = leader(tmp_path)
        partition.append_records_to_leader(offsets_batch(0), -1)
        replicate(partition)
        partition.append_txn_marker(7, 1, 0, commit=False)   # the coordinator's fence
        replicate(partition)
        with pytest.raises(PartitionError) as refused:
            partition.append_records_to_leader(offsets_batch(0), -1)
        assert refused.value.error_code == E.INVALID_PRODUCER_EPOCH
        assert partition.last_stable_offset == partition.log.log_end_offset == 2
        partition.append_records_to_leader(offsets_batch(2), -1)  # the next epoch's transaction
        replicate(partition)
        assert partition.last_stable_offset == 2
    run(main())

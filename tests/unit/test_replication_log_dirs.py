"""A broker's replicas and its log dirs, without sockets: moving a replica
to another dir while batches keep coming (every offset once, in order,
with its transactions' index), the answers of AlterReplicaLogDirs for bad
input, the offset lag DescribeLogDirs reports, and a dir that fails while
the partitions of the others go on. Real logs in temp dirs, a real
ReplicaManager on an event loop."""
from __future__ import annotations

import asyncio
import os
import shutil

from kcore._native import records as native_records
from kcore.config import BrokerConfig
from kcore.log.manager import LogManager
from kcore.metadata import BrokerInfo, PartitionState
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.replica_manager import ReplicaManager
from tests.support.batches import make_batch
from tests.support.log import read_all

DEFAULTS = {**BrokerConfig().topic_defaults(), "segment.bytes": 20_000}
ME = BrokerInfo(1, "127.0.0.1", 9092)
TRANSACTIONAL = 0x10


def replica_manager(tmp_path, dirs="ab") -> ReplicaManager:
    manager = LogManager([tmp_path / name for name in dirs], DEFAULTS)
    return ReplicaManager(1, manager, DEFAULTS, 86_400_000)


def lead(manager: ReplicaManager, topic: str, partitions: int = 1, leader: int = 1) -> None:
    states = [PartitionState(topic, index, leader, 1, (1,), (1,), 1, 1) for index in range(partitions)]
    manager.on_update_metadata(1, 1, [ME], states)
    if leader == 1:
        manager.on_leader_and_isr(1, 1, states, [ME])


def produce(manager: ReplicaManager, topic: str, index: int = 0, records: int = 4,
            value_bytes: int = 100, **kwargs) -> None:
    manager.get(topic, index).append_records_to_leader(
        memoryview(make_batch(records, value_bytes=value_bytes, **kwargs)), 1)


def offsets_of(data: bytes) -> list[int]:
    headers = native_records.batch_infos(bytearray(data))
    return [offset for h in headers for offset in range(h.base_offset, h.last_offset + 1)]


async def moved(manager: ReplicaManager, topic: str, directory, timeout_s: float = 20.0) -> None:
    async with asyncio.timeout(timeout_s):
        while manager.log_manager.log_dir_of(topic, 0) != directory \
                or manager.get(topic, 0).future_log is not None:
            await asyncio.sleep(0.001)


def test_a_replica_moves_under_appends_with_every_offset_once(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "m")
        for _ in range(200):  # ~100 KB: several steps and segments
            produce(manager, "m")
        stop = asyncio.Event()

        async def keep_producing():
            while not stop.is_set():
                produce(manager, "m")
                await asyncio.sleep(0)

        producer = asyncio.create_task(keep_producing())
        assert manager.alter_replica_log_dirs({("m", 0): str(tmp_path / "b")}) == {("m", 0): E.NONE}
        future = manager.get("m", 0).future_log  # made now, copied from the next loop turn on
        assert future is not None and future.dir.name.endswith("-future")
        assert 0 < manager.offset_lag("m", 0, future.log_end_offset, True)
        await moved(manager, "m", tmp_path / "b")
        stop.set()
        await producer
        for _ in range(3):
            produce(manager, "m")
        partition = manager.get("m", 0)
        assert partition.log.dir == tmp_path / "b" / "m-0"
        assert offsets_of(read_all(partition.log)) == list(range(partition.log_end_offset))
        assert manager.mover.completed == 1
        manager.shutdown()
        manager.log_manager.shutdown()
        restarted = LogManager([tmp_path / "a", tmp_path / "b"], DEFAULTS)
        assert restarted.log_dir_of("m", 0) == tmp_path / "b"
        assert restarted.get_log("m", 0).log_end_offset == partition.log_end_offset
        restarted.shutdown()
    asyncio.run(main())


def test_aborted_transactions_and_producer_state_move_with_the_replica(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "t")
        partition = manager.get("t", 0)
        produce(manager, "t", producer_id=7, producer_epoch=0, base_sequence=0,
                attributes=TRANSACTIONAL)
        partition.append_txn_marker(7, 0, 0, commit=False)
        produce(manager, "t", producer_id=8, producer_epoch=0, base_sequence=0)
        aborted = partition.log.collect_aborted_txns(0, partition.log_end_offset)
        assert len(aborted) == 1
        manager.alter_replica_log_dirs({("t", 0): str(tmp_path / "b")})
        await moved(manager, "t", tmp_path / "b")
        assert partition.log.collect_aborted_txns(0, partition.log_end_offset) == aborted
        produce(manager, "t", producer_id=8, producer_epoch=0, base_sequence=4)  # in sequence
        partition.snapshot_producer_state()
        assert list((tmp_path / "b" / "t-0").glob("*.snapshot"))
        manager.shutdown()
    asyncio.run(main())


def test_alter_replica_log_dirs_answers_bad_input_as_kafka(tmp_path):
    async def main():
        manager = replica_manager(tmp_path, "abc")
        lead(manager, "here")
        lead(manager, "elsewhere", leader=2)  # known to the cluster, no replica here
        long_name = "x" * 249
        lead(manager, long_name)
        answers = manager.alter_replica_log_dirs({
            ("here", 0): str(tmp_path / "nowhere"),
            ("here", 1): str(tmp_path / "a"),
            ("missing", 0): str(tmp_path / "b"),
            ("elsewhere", 0): str(tmp_path / "c"),
            (long_name, 0): str(tmp_path / "b"),
        })
        assert answers == {("here", 0): E.LOG_DIR_NOT_FOUND, ("here", 1): E.UNKNOWN_TOPIC_OR_PARTITION,
                           ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                           ("elsewhere", 0): E.REPLICA_NOT_AVAILABLE,
                           (long_name, 0): E.INVALID_TOPIC_EXCEPTION}
        assert manager.alter_replica_log_dirs({("here", 0): "a"}) == {("here", 0): E.LOG_DIR_NOT_FOUND}
        current = manager.log_manager.log_dir_of("here", 0)
        assert manager.alter_replica_log_dirs({("here", 0): str(current)}) == {("here", 0): E.NONE}
        assert manager.get("here", 0).future_log is None  # already there: nothing to move
        # The partition not hosted yet is created in the dir asked for.
        manager.on_leader_and_isr(1, 1, [PartitionState("elsewhere", 0, 1, 2, (1,), (1,), 2, 1)], [ME])
        assert manager.log_manager.log_dir_of("elsewhere", 0) == tmp_path / "c"
        manager.log_manager.handle_log_dir_failure(tmp_path / "c", "test")
        assert manager.alter_replica_log_dirs({("here", 0): str(tmp_path / "c")}) == \
            {("here", 0): E.KAFKA_STORAGE_ERROR}
        manager.shutdown()
    asyncio.run(main())


def test_a_move_goes_elsewhere_or_back_when_asked_again(tmp_path):
    async def main():
        manager = replica_manager(tmp_path, "abc")
        lead(manager, "c")
        for _ in range(2000):
            produce(manager, "c")
        source = manager.log_manager.log_dir_of("c", 0)
        others = [d for d in (tmp_path / n for n in "abc") if d != source]
        manager.alter_replica_log_dirs({("c", 0): str(others[0])})
        first = manager.get("c", 0).future_log
        manager.alter_replica_log_dirs({("c", 0): str(others[1])})
        assert not first.dir.exists()
        assert manager.get("c", 0).future_log.dir.parent == others[1]
        manager.alter_replica_log_dirs({("c", 0): str(source)})  # back: the move is cancelled
        assert manager.get("c", 0).future_log is None and manager.log_manager.future_logs == {}
        await asyncio.sleep(0.05)
        assert manager.log_manager.log_dir_of("c", 0) == source
        manager.shutdown()
    asyncio.run(main())


def test_a_follower_truncation_cuts_the_future_log_too(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "f")
        for _ in range(600):  # ~10 MB: the copy takes several steps
            produce(manager, "f", records=64, value_bytes=250)
        partition = manager.get("f", 0)
        manager.alter_replica_log_dirs({("f", 0): str(tmp_path / "b")})
        while partition.future_log.log_end_offset <= 200:
            await asyncio.sleep(0)
        partition.truncate_to(128)
        assert partition.future_log.log_end_offset == 128
        await moved(manager, "f", tmp_path / "b")
        assert partition.log_end_offset == 128
        assert offsets_of(read_all(partition.log)) == list(range(128))
        manager.shutdown()
    asyncio.run(main())


def test_offset_lag_of_current_and_future_logs(tmp_path):
    manager = replica_manager(tmp_path)
    lead(manager, "l")
    produce(manager, "l")
    partition = manager.get("l", 0)
    assert manager.offset_lag("l", 0, partition.log_end_offset, False) == 0
    assert manager.offset_lag("l", 0, 1, True) == partition.log_end_offset - 1
    partition.high_watermark = partition.log_end_offset + 5  # a view from a log behind it
    assert manager.offset_lag("l", 0, partition.log_end_offset, False) == 5
    assert manager.offset_lag("nope", 0, 0, False) == -1
    manager.shutdown()


def test_a_failed_dir_takes_its_partitions_offline_and_the_others_serve(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        told: list = []
        manager.log_dir_failure_listeners.append(told.append)
        lead(manager, "o", partitions=2)
        lost = next(i for i in range(2) if manager.log_manager.log_dir_of("o", i) == tmp_path / "a")
        kept = 1 - lost
        left = manager.leadership_listeners.append(lambda p, is_leader: told.append((p.index, is_leader)))
        assert left is None
        shutil.rmtree(tmp_path / "a")
        os.mkdir(tmp_path / "a")  # an empty mount point where the disk was
        manager.log_manager.dirs.check()
        await asyncio.sleep(0)  # the failure is handled on the next turn of the loop
        assert told == [(lost, False), tmp_path / "a"]
        assert manager.get("o", lost) is None and manager.offline_partitions == {("o", lost)}
        assert manager.partition_error("o", lost) == E.KAFKA_STORAGE_ERROR
        assert manager.partition_error("o", 7) == E.UNKNOWN_TOPIC_OR_PARTITION
        produce(manager, "o", kept)
        state = PartitionState("o", lost, 1, 2, (1,), (1,), 2, 1)
        assert manager.on_leader_and_isr(1, 1, [state], [ME]) == {("o", lost): E.KAFKA_STORAGE_ERROR}
        assert manager.alter_replica_log_dirs({("o", kept): str(tmp_path / "a")}) == \
            {("o", kept): E.KAFKA_STORAGE_ERROR}
        manager.checkpoint_high_watermarks()
        assert not (tmp_path / "a" / "replication-offset-checkpoint").exists()
        manager.shutdown()
    asyncio.run(main())


def test_an_append_that_fails_reports_the_dir(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "w", partitions=2)
        index = next(i for i in range(2) if manager.log_manager.log_dir_of("w", i) == tmp_path / "b")
        partition = manager.get("w", index)
        os.close(partition.log.active_segment.fd)
        partition.log.active_segment.fd = os.open(os.devnull, os.O_RDONLY)  # writes fail: EBADF
        try:
            produce(manager, "w", index)
        except Exception as exc:
            assert getattr(exc, "error_code", None) == E.KAFKA_STORAGE_ERROR
        await asyncio.sleep(0)
        assert manager.log_manager.dirs.offline.keys() == {tmp_path / "b"}
        assert manager.partition_error("w", index) == E.KAFKA_STORAGE_ERROR
        produce(manager, "w", 1 - index)
        manager.shutdown()
    asyncio.run(main())


def test_the_copy_starts_with_the_batch_holding_the_log_start(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "s")
        for _ in range(300):
            produce(manager, "s")
        partition = manager.get("s", 0)
        partition.log.maybe_increment_log_start_offset(6)  # inside the second batch
        manager.alter_replica_log_dirs({("s", 0): str(tmp_path / "b")})
        await moved(manager, "s", tmp_path / "b")
        assert partition.log.log_start_offset == 6
        assert offsets_of(read_all(partition.log)) == list(range(4, partition.log_end_offset))
        manager.shutdown()
    asyncio.run(main())


def test_a_log_start_that_passes_the_copy_restarts_it_there(tmp_path):
    async def main():
        manager = replica_manager(tmp_path)
        lead(manager, "p")
        for _ in range(300):
            produce(manager, "p")
        partition = manager.get("p", 0)
        manager.alter_replica_log_dirs({("p", 0): str(tmp_path / "b")})
        end = partition.log_end_offset
        partition.log.maybe_increment_log_start_offset(end)  # all of it deleted meanwhile
        await moved(manager, "p", tmp_path / "b")
        assert (partition.log.log_start_offset, partition.log_end_offset) == (end, end)
        produce(manager, "p")
        assert offsets_of(read_all(partition.log)) == list(range(end, end + 4))
        manager.shutdown()
    asyncio.run(main())

"""Group commit (kcore/log/durability.py) over both real backends (sync_backends.py): rounds
are shared, cover every file holding unsynced data, report real kernel
errors, and the io_uring backend is the one ``auto`` picks here."""
from __future__ import annotations

import asyncio
import errno

import pytest

from kcore.log.config import LogConfig
from kcore.log.durability import GroupCommitSyncer, SyncFailedError, open_syncer
from kcore.log.errors import KafkaStorageError
from kcore.log.log import Log
from kcore.log.sync_backends import IoUringBackend, ThreadBackend
from tests.support.batches import make_batch
from tests.support.log import segment_fd_on_a_pipe

BACKENDS = ["io_uring", "thread"]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def make_syncer(kind: str, **kwargs) -> GroupCommitSyncer:
    loop = asyncio.get_running_loop()
    backend = IoUringBackend(loop, **kwargs) if kind == "io_uring" else ThreadBackend(loop, **kwargs)
    return GroupCommitSyncer(backend, loop)


def append(log: Log, count: int = 1) -> int:
    for _ in range(count):
        log.append(make_batch(), 0, defer_flush=True)
    return log.log_end_offset


def test_auto_picks_io_uring_on_this_machine_and_says_so():
    async def main():
        syncer, sentence = open_syncer(asyncio.get_running_loop(), "auto")
        assert syncer.name == "io_uring"
        assert "io_uring" in sentence and "liburing" in sentence
        await syncer.close()
    run(main())


def test_choices_thread_inline_and_unknown(monkeypatch):
    async def main():
        syncer, sentence = open_syncer(asyncio.get_running_loop(), "thread")
        assert syncer.name == "thread" and "thread" in sentence
        await syncer.close()
        monkeypatch.setenv("KCORE_SYNCER", "inline")
        syncer, sentence = open_syncer(asyncio.get_running_loop())
        assert syncer is None and "no group commit" in sentence
        with pytest.raises(ValueError, match="KCORE_SYNCER"):
            open_syncer(asyncio.get_running_loop(), "sometimes")
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_appends_during_one_round_share_the_next(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        log = Log.open(tmp_path / "t-0")
        first = syncer.sync(log, append(log))
        await asyncio.sleep(0)  # the first round is submitted
        assert syncer.rounds == 1
        later = [syncer.sync(log, append(log)) for _ in range(50)]
        results = await asyncio.gather(first, *later)
        assert syncer.rounds == 2
        assert syncer.fsyncs == 3  # segment + directory, then the segment again
        assert results[0] >= 1 and results[-1] == 51 == syncer.synced_offset(log)
        log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_requests_within_one_loop_iteration_make_one_round_per_log(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(16)]
        futures = [syncer.sync(log, append(log, 3)) for log in logs]
        futures += [syncer.sync(log, log.log_end_offset) for log in logs]
        assert await asyncio.gather(*futures) == [3] * 32
        assert syncer.rounds == 16 and syncer.fsyncs == 32  # each: its segment + its directory
        assert syncer.sync(logs[0], 3).done()  # already synced: answered at once
        for log in logs:
            log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_round_covers_every_segment_with_unsynced_data_and_the_new_directory_entry(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        one = len(make_batch())
        log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * one))
        assert await syncer.sync(log, append(log, 2)) == 2
        before = syncer.fsyncs
        assert await syncer.sync(log, append(log, 5)) == 7  # rolls twice: 3 segments hold 2..6
        assert len(log.segments) == 3
        assert syncer.fsyncs - before == 3 + 1
        before = syncer.fsyncs
        assert await syncer.sync(log, append(log)) == 8  # same active segment: one file, no directory
        assert syncer.fsyncs - before == 1
        log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_failed_fsync_fails_every_waiter_with_the_kernel_error(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        log = Log.open(tmp_path / "t-0")
        await syncer.sync(log, append(log))
        with segment_fd_on_a_pipe(log.active_segment):
            waiters = [syncer.sync(log, log.log_end_offset + 1 + i) for i in range(3)]
            for waiter in waiters:
                with pytest.raises(SyncFailedError) as failure:
                    await waiter
                assert failure.value.errno == errno.EINVAL
                assert failure.value.error_code == 56
            assert syncer.synced_offset(log) == 1
        assert await syncer.sync(log, append(log)) == 2  # the next round works again
        log.close()
        await syncer.close()
    run(main())


def test_closed_log_fails_its_waiters_as_a_storage_error(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        log = Log.open(tmp_path / "t-0")
        target = append(log)
        log.close()
        with pytest.raises(KafkaStorageError, match="closed"):
            await syncer.sync(log, target)
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_close_waits_for_rounds_in_flight_and_refuses_later_requests(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind)
        log = Log.open(tmp_path / "t-0")
        pending = syncer.sync(log, append(log, 20))
        await syncer.close()
        assert pending.done() and pending.result() == 20
        with pytest.raises(KafkaStorageError, match="closed"):
            await syncer.sync(log, append(log))
        log.close()
    run(main())


def test_small_ring_queues_excess_fsyncs_and_survives_many_wraparounds(tmp_path):
    async def main():
        syncer = make_syncer("io_uring", entries=4)
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(10)]
        for _ in range(40):  # 400 rounds through a 4-entry ring (8 CQEs)
            futures = [syncer.sync(log, append(log)) for log in logs]
            assert syncer.backend.in_flight <= 4
            await asyncio.gather(*futures)
        assert [syncer.synced_offset(log) for log in logs] == [40] * 10
        assert syncer.backend.in_flight == 0
        for log in logs:
            log.close()
        await syncer.close()
    run(main())


def test_a_waiter_for_offsets_truncated_away_fails_instead_of_waiting_forever(tmp_path):
    async def main():
        syncer = make_syncer("io_uring")
        log = Log.open(tmp_path / "t-0")
        assert await syncer.sync(log, append(log, 3)) == 3
        stale = syncer.sync(log, append(log, 2))  # waits for offset 5
        log.truncate_to(3)
        with pytest.raises(KafkaStorageError, match="truncated"):
            await stale
        assert await syncer.sync(log, append(log)) == 4
        log.close()
        await syncer.close()
    run(main())

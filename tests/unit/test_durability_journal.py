"""The group-commit journal (kcore/log/journal.py, journal_rounds.py): its
file format, recovery replay, and rounds through both real backends."""
from __future__ import annotations

import asyncio
import errno
import os

import pytest

from kcore.log import journal as journal_file
from kcore.log.durability import GroupCommitSyncer, SyncFailedError
from kcore.log.journal import DATA_START, JOURNAL_FILE, Journal, encode_entry, read_entries, replay
from kcore.log.log import Log
from kcore.log.sync_backends import IoUringBackend, ThreadBackend
from tests.support.batches import make_batch
from tests.support.log import read_slices

BACKENDS = ["io_uring", "thread"]
SMALL_JOURNAL = 2 << 20


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def write_entries(journal: Journal, entries: list[bytearray]) -> None:
    """Entries one after another, unpadded (the reader needs no padding)."""
    for entry in entries:
        os.pwrite(journal.header_fd, entry, journal.position)
        journal.position += len(entry)


def test_entries_read_back_in_order_until_a_torn_one(tmp_path):
    journal = Journal.create(tmp_path, SMALL_JOURNAL)
    batches = [make_batch(2), make_batch(1, value_bytes=500), make_batch(3)]
    entries = [encode_entry(journal.generation, "t-0", i * 10, b) for i, b in enumerate(batches)]
    write_entries(journal, entries)
    path = tmp_path / JOURNAL_FILE
    assert os.path.getsize(path) == SMALL_JOURNAL
    assert list(read_entries(path)) == [("t-0", i * 10, bytes(b)) for i, b in enumerate(batches)]
    torn_at = DATA_START + len(entries[0]) + len(entries[1]) - 1
    os.pwrite(journal.header_fd, b"\xff", torn_at)  # last byte of the second entry
    assert [e[1] for e in read_entries(path)] == [0]
    journal.close()


def test_a_new_generation_hides_older_entries_and_a_torn_header_falls_back(tmp_path):
    journal = Journal.create(tmp_path, SMALL_JOURNAL)
    path = tmp_path / JOURNAL_FILE
    write_entries(journal, [encode_entry(1, "t-0", 0, make_batch())])
    journal.checkpoint_header()
    assert (journal.generation, journal.position) == (2, DATA_START)
    assert list(read_entries(path)) == []
    write_entries(journal, [encode_entry(2, "t-0", 1, make_batch())])
    assert [e[1] for e in read_entries(path)] == [1]
    # Generation 2 lives in slot 0: tear it and generation 1 is current again.
    os.pwrite(journal.header_fd, b"\x07", 15)  # low byte of its generation: CRC mismatch
    fd = os.open(path, os.O_RDONLY)
    assert journal_file._read_generation(fd) == 1
    os.close(fd)
    assert list(read_entries(path)) == []  # the slot-1 generation's entries were overwritten
    journal.close()


def test_replay_appends_exactly_what_each_log_lacks_and_removes_the_journal(tmp_path):
    log = Log.open(tmp_path / "t-0")
    kept = [make_batch(1, value_bytes=100 + i) for i in range(3)]
    lost = [make_batch(2, value_bytes=200 + i) for i in range(2)]
    for batch in kept:
        log.append(batch, 0)
    for i, batch in enumerate(lost):  # as the broker journals them: offsets assigned
        batch[0:8] = (3 + 2 * i).to_bytes(8, "big")
    journal = Journal.create(tmp_path, SMALL_JOURNAL)
    entries = [encode_entry(1, "t-0", i, kept[i]) for i in range(3)]
    entries += [encode_entry(1, "t-0", 3, lost[0]), encode_entry(1, "gone-0", 0, make_batch()),
                encode_entry(1, "t-0", 5, lost[1]), encode_entry(1, "t-0", 99, make_batch())]
    write_entries(journal, entries)
    journal.close()
    assert replay(tmp_path, {"t-0": log}) == 2
    assert log.log_end_offset == 7
    assert read_slices(log.read(0, 1 << 20)) == b"".join(bytes(b) for b in kept + lost)
    assert log.recovery_point == 7  # flushed
    assert not (tmp_path / JOURNAL_FILE).exists()
    assert replay(tmp_path, {"t-0": log}) == 0
    log.close()


def make_syncer(kind: str, directory, size: int = SMALL_JOURNAL) -> GroupCommitSyncer:
    loop = asyncio.get_running_loop()
    backend = IoUringBackend(loop) if kind == "io_uring" else ThreadBackend(loop)
    return GroupCommitSyncer(backend, loop, directory, size)


async def append_and_sync(syncer, log, batch) -> asyncio.Future:
    info = log.append(batch, 0, defer_flush=True)
    return syncer.sync(log, log.log_end_offset, batch, info.first_offset)


async def journal_ready(syncer, log) -> None:
    """The first durable append creates the journal in a worker thread."""
    await (await append_and_sync(syncer, log, make_batch()))
    for _ in range(500):
        if syncer.journal.status == "ready":
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"journal status {syncer.journal.status}")


@pytest.mark.parametrize("kind", BACKENDS)
def test_appends_to_many_logs_share_one_journal_write_and_fdatasync(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind, tmp_path)
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(4)]
        await journal_ready(syncer, logs[0])
        rounds, fsyncs = syncer.journal.rounds, syncer.fsyncs
        batches = [make_batch(2, value_bytes=300 + i) for i in range(4)]
        waiters = [await append_and_sync(syncer, log, batch) for log, batch in zip(logs, batches)]
        assert await asyncio.gather(*waiters) == [3, 2, 2, 2]
        assert (syncer.journal.rounds, syncer.fsyncs) == (rounds + 1, fsyncs + 1)
        assert all(syncer.synced_offset(log) == log.log_end_offset for log in logs)
        # Each entry holds the batch as the log holds it (offsets assigned).
        entries = list(read_entries(tmp_path / JOURNAL_FILE))
        assert [(name, base) for name, base, _ in entries] == [("t-0", 1), ("t-1", 0), ("t-2", 0), ("t-3", 0)]
        for (_, base, data), log in zip(entries, logs):
            assert data == read_slices(log.read(base, 1 << 20))
        for log in logs:
            log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_full_journal_checkpoints_the_logs_and_starts_a_new_generation(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind, tmp_path)
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(2)]
        await journal_ready(syncer, logs[0])
        await (await append_and_sync(syncer, logs[1], make_batch()))
        for i in range(60):  # ~3.8 MB through a 2 MiB journal
            log = logs[i % 2]
            expected = log.log_end_offset + 1
            assert await (await append_and_sync(syncer, log, make_batch(1, value_bytes=64 << 10))) == expected
        assert syncer.journal.checkpoints >= 1 and syncer.journal.journal.generation > 1
        # The checkpoint fdatasynced both logs' files, and the entries it
        # covered are no longer valid: only the new generation's remain.
        assert all(syncer._states[log].checkpointed_offset > 2 for log in logs)
        remaining = list(read_entries(tmp_path / JOURNAL_FILE))
        assert len(remaining) < 30 and all(base >= 2 for _, base, _ in remaining)
        for log in logs:
            log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_forgetting_a_journaled_log_leaves_no_entry_of_it(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind, tmp_path)
        log = Log.open(tmp_path / "t-0")
        await journal_ready(syncer, log)
        await (await append_and_sync(syncer, log, make_batch()))
        assert list(read_entries(tmp_path / JOURNAL_FILE))
        generation = syncer.journal.journal.generation
        syncer.forget(log)  # as before the log is deleted
        assert syncer.journal.journal.generation == generation + 1
        assert list(read_entries(tmp_path / JOURNAL_FILE)) == []
        assert log.recovery_point == log.log_end_offset
        log.close()
        await syncer.close()
    run(main())


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_failed_journal_round_fails_its_waiters_and_later_syncs_use_the_files(tmp_path, kind):
    async def main():
        syncer = make_syncer(kind, tmp_path)
        log = Log.open(tmp_path / "t-0")
        await journal_ready(syncer, log)
        journal = syncer.journal.journal
        real_fd = journal.fd
        read_end, write_end = os.pipe()  # a write at an offset, or fdatasync, of a pipe fails
        journal.fd = write_end
        try:
            waiter = await append_and_sync(syncer, log, make_batch())
            with pytest.raises(SyncFailedError) as failure:
                await waiter
            assert failure.value.errno in (errno.EINVAL, errno.ESPIPE, errno.EIO)
        finally:
            os.close(read_end)
            os.close(real_fd)
        assert syncer.journal.status == "failed"
        rounds = syncer.rounds
        assert await (await append_and_sync(syncer, log, make_batch())) == log.log_end_offset
        assert syncer.rounds == rounds + 1  # a per-file round
        log.close()
        await syncer.close()
    run(main())


def test_on_tmpfs_the_journal_rounds_and_replay_work(tmp_path):
    """A second file system (tmpfs takes O_DIRECT since Linux 6.6; older
    ones refuse it and rounds are written through the page cache)."""
    from tests.support.tmpfs import mounted_tmpfs

    with mounted_tmpfs(tmp_path / "fs", "16m") as directory:
        async def main():
            syncer = make_syncer("io_uring", directory)
            log = Log.open(directory / "t-0")
            await journal_ready(syncer, log)
            batch = make_batch(3, value_bytes=700)
            assert await (await append_and_sync(syncer, log, batch)) == 4
            entries = list(read_entries(directory / JOURNAL_FILE))
            assert entries[-1] == ("t-0", 1, read_slices(log.read(1, 1 << 20)))
            log.close()
            await syncer.close()
        run(main())
        log = Log.open(directory / "t-0")
        log.truncate_to(1)  # as if the page cache lost the journaled batch
        assert replay(directory, {"t-0": log}) == 1 and log.log_end_offset == 4
        log.close()


@pytest.mark.parametrize("kind", BACKENDS)
def test_buffered_rounds_where_o_direct_is_unavailable_replay_too(tmp_path, kind):
    """The page-cache path a file system without O_DIRECT takes: the same
    rounds and entries, made durable by the fdatasync after each write."""
    async def main():
        syncer = make_syncer(kind, tmp_path)
        syncer.journal.direct = False
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(2)]
        await journal_ready(syncer, logs[0])
        assert syncer.journal.journal.direct is False
        rounds = syncer.journal.rounds
        waiters = [await append_and_sync(syncer, log, make_batch(2, value_bytes=900)) for log in logs]
        assert await asyncio.gather(*waiters) == [3, 2]
        assert syncer.journal.rounds == rounds + 1
        for log in logs:
            log.close()
        await syncer.close()
    run(main())
    logs = {f"t-{i}": Log.open(tmp_path / f"t-{i}") for i in range(2)}
    for log in logs.values():
        log.truncate_to(1 if log.dir.name == "t-0" else 0)  # the page cache lost the last batches
    assert replay(tmp_path, logs) == 2
    assert [log.log_end_offset for log in logs.values()] == [3, 2]
    for log in logs.values():
        log.close()


@pytest.mark.parametrize("kind", BACKENDS)
def test_appends_racing_checkpoints_all_become_durable(tmp_path, kind):
    """Appends keep coming while the full journal checkpoints and right
    after it ends, before the next round starts: every one is synced and
    none fails (entries pending across the generation change are resealed)."""
    async def main():
        syncer = make_syncer(kind, tmp_path)
        logs = [Log.open(tmp_path / f"t-{i}") for i in range(4)]
        await journal_ready(syncer, logs[0])
        waiters = []
        # ~5 MB through a 2 MiB journal usually checkpoints twice; how much
        # of it is journaled depends on how rounds and checkpoints interleave
        # (a loaded machine merges more), so go on, bounded, until it has.
        for i in range(960):
            if i >= 240 and syncer.journal.checkpoints >= 2:
                break
            log = logs[i % 4]
            waiters.append((log, await append_and_sync(syncer, log, make_batch(1, value_bytes=20_000))))
            if i % 3 == 0:
                await asyncio.sleep(0)  # rounds and checkpoints end between appends
        for log, waiter in waiters:
            assert await waiter <= log.log_end_offset
        assert syncer.journal.checkpoints >= 2
        assert all(syncer.synced_offset(log) == log.log_end_offset for log in logs)
        for log in logs:
            log.close()
        await syncer.close()
    run(main())

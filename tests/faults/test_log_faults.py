"""Storage faults: after each one, reopening leaves exactly the valid prefix
of the log and appends continue at the right offset."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.log.manager import LogManager
from tests.support.log import assert_prefix_of_written_batches, batch_for

REPO = Path(__file__).resolve().parents[2]








def write_log(directory: Path, count: int, config: LogConfig, sizes=(200,)) -> Log:
    log = Log.open(directory, config)
    for offset in range(count):
        log.append(batch_for(offset, sizes[offset % len(sizes)]), leader_epoch=0)
    return log


def segment_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


def test_torn_last_batch_is_cut_and_appends_continue(tmp_path):
    directory = tmp_path / "t-0"
    write_log(directory, 10, LogConfig()).close()
    last = segment_files(directory, ".log")[-1]
    with open(last, "r+b") as f:
        f.truncate(os.path.getsize(last) - 50)
    log = Log.open(directory, LogConfig(), recovery_point=0)
    assert log.log_end_offset == 9
    assert_prefix_of_written_batches(log)
    assert log.append(batch_for(9), 0).first_offset == 9
    assert_prefix_of_written_batches(log)
    log.close()


def test_flipped_byte_in_a_middle_segment_truncates_there_and_drops_later_segments(tmp_path):
    directory = tmp_path / "t-0"
    one = len(batch_for(0))
    config = LogConfig(segment_bytes=4 * one, index_interval_bytes=1)
    write_log(directory, 16, config).close()
    logs = segment_files(directory, ".log")
    assert [p.name[:20] for p in logs] == [f"{o:020d}" for o in (0, 4, 8, 12)]
    with open(logs[1], "r+b") as f:  # third batch of the second segment, inside its records
        f.seek(2 * one + 100)
        byte = f.read(1)
        f.seek(2 * one + 100)
        f.write(bytes([byte[0] ^ 0x40]))
    log = Log.open(directory, config, recovery_point=0)
    assert log.log_end_offset == 6
    assert [s.base_offset for s in log.segments] == [0, 4]
    assert segment_files(directory, ".log") == logs[:2]
    assert_prefix_of_written_batches(log)
    assert log.append(batch_for(6), 0).first_offset == 6
    assert log.read(5, 1)[0].position == one
    log.close()


def test_zero_filled_preallocated_tail_is_trimmed(tmp_path):
    directory = tmp_path / "t-0"
    config = LogConfig(preallocate=True, segment_bytes=1 << 20)
    log = write_log(directory, 5, config)
    path = log.active_segment.log_path
    assert os.path.getsize(path) == 1 << 20  # preallocated
    size = log.active_segment.size
    os.close(log.active_segment.fd)  # crash: nothing trimmed
    log.active_segment.fd = -1
    log = Log.open(directory, config, recovery_point=0)
    assert log.log_end_offset == 5 and log.active_segment.size == size
    assert_prefix_of_written_batches(log)
    assert log.append(batch_for(5), 0).first_offset == 5
    log.close()
    assert os.path.getsize(path) == size + len(batch_for(5))


@pytest.mark.parametrize("damage", ["delete", "garbage", "misplaced-entry", "time-index-delete"])
def test_missing_or_corrupt_index_is_rebuilt_after_clean_shutdown(tmp_path, damage):
    directory = tmp_path / "t-0"
    one = len(batch_for(0))
    config = LogConfig(segment_bytes=20 * one, index_interval_bytes=1)
    log = write_log(directory, 50, config)
    expected = [log.read(offset, 1)[0] for offset in range(50)]
    expected = [(s.position, s.size) for s in expected]
    log.close()
    index = segment_files(directory, ".index")[1]
    if damage == "delete":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(os.urandom(os.path.getsize(index)))
    elif damage == "misplaced-entry":
        data = bytearray(index.read_bytes())
        data[8 * 5 + 7] += 3  # entry 5 now points 3 bytes into its batch, still in order
        index.write_bytes(bytes(data))
    else:
        segment_files(directory, ".timeindex")[1].unlink()
    log = Log.open(directory, config, clean_shutdown=True)
    assert log.log_end_offset == 50
    assert [(s.position, s.size) for s in (log.read(o, 1)[0] for o in range(50))] == expected
    assert log.offset_for_timestamp(1000 + 33) == (33, 1000 + 33)
    assert_prefix_of_written_batches(log)
    assert index.exists()
    log.close()


CHILD = textwrap.dedent("""
    import sys
    from kcore._native import records
    from kcore.log.manager import LogManager
    from kcore.testing import batches
    from kcore.testing.batches import build_batch

    batches.crc32c = records.crc32c  # build batches fast: most time goes to writing them

    manager = LogManager([sys.argv[1]], {"segment.bytes": int(sys.argv[2]), "preallocate": sys.argv[3]})
    log = manager.get_or_create_log("kill", 0)
    sizes = (100, 300_000, 5_000, 1_000_000)
    offset = log.log_end_offset
    while True:
        batch = build_batch([bytes([offset % 251]) * sizes[offset % 4]], base_timestamp=1000 + offset)
        info = log.append(batch, 0)
        if offset % 7 == 0:
            manager.flush_dirty_logs()
        print(info.last_offset, flush=True)
        offset += 1
""")


def run_and_kill(data_dir: Path, appends: int, segment_bytes: int, preallocate: str) -> int:
    """Start an appending process, SIGKILL it after ``appends`` acks (plus
    a random few milliseconds); returns the last acknowledged offset."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data_dir), str(segment_bytes), preallocate],
                             stdout=subprocess.PIPE, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    acked = -1
    try:
        while acked < appends:
            line = child.stdout.readline()
            assert line, "appending process died before it was killed"
            acked = int(line)
        time.sleep(int.from_bytes(os.urandom(1), "big") / 10_000)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    for line in child.stdout.read().split():
        acked = int(line)
    child.stdout.close()
    return acked


@pytest.mark.parametrize("preallocate", ["false", "true"])
def test_sigkill_while_appending_leaves_a_valid_prefix_with_every_acked_batch(tmp_path, preallocate):
    data_dir = tmp_path / "data"
    acked_total = -1
    for round_number in range(3):
        acked = run_and_kill(data_dir, acked_total + 15, segment_bytes=3_000_000, preallocate=preallocate)
        assert not (data_dir / ".kafka_cleanshutdown").exists()
        manager = LogManager([data_dir], {"segment.bytes": 3_000_000, "preallocate": preallocate})
        log = manager.get_log("kill", 0)
        assert log.log_end_offset >= acked + 1, f"round {round_number}: acked batches lost"
        assert_prefix_of_written_batches(log)
        for segment in log.segments:
            assert not segment.needs_rebuild()
        acked_total = log.log_end_offset - 1
        manager._close_all()  # another unclean stop before the next round
    manager = LogManager([data_dir], {"segment.bytes": 3_000_000})
    log = manager.get_log("kill", 0)
    next_offset = log.log_end_offset
    assert log.append(batch_for(next_offset), 0).first_offset == next_offset
    assert_prefix_of_written_batches(log)
    manager.shutdown()

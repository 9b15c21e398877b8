"""SIGKILL during compaction: a subprocess cleans a copy of one log and
kills itself at a chosen step of the pass or at a chosen rename of a swap;
reopening the log (unclean) must give a valid log with the same latest
value per key, and a new pass must finish the job."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.cleaner import clean, keyed_batch, latest_of, read_batches, records_of

CONFIG = dict(segment_bytes=4096, cleanup_policy="compact", file_delete_delay_ms=60_000)
KEYS = 40

# The cleaning subprocess: kill itself at step N of the pass, or just before
# the N-th os.replace (each swap renames 3 files .cleaned -> .swap, 3 per
# old segment to .deleted, 3 .swap -> final).
CLEANER = textwrap.dedent("""
    import os, signal, sys
    from kcore.log.cleaner_task import CleaningTask
    from kcore.log.config import LogConfig
    from kcore.log.log import Log

    directory, mode, point = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = LogConfig(segment_bytes=4096, cleanup_policy="compact", file_delete_delay_ms=60_000)
    log = Log.open(directory, config, clean_shutdown=True)
    if mode == "rename":
        real_replace, calls = os.replace, [0]
        def replace(source, target):
            calls[0] += 1
            if calls[0] == point:
                os.kill(os.getpid(), signal.SIGKILL)
            real_replace(source, target)
        os.replace = replace
    steps = CleaningTask(log, 0, log.active_segment.base_offset, 10_000).steps()
    value, step = None, 0
    while True:
        step += 1
        if mode == "step" and step == point:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            request = steps.send(value)
        except StopIteration:
            break
        value = request.function(*request.args) if request is not None else None
""")


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> tuple[Path, dict]:
    """A log of ~30 segments with updates and some tombstones, closed cleanly."""
    directory = tmp_path_factory.mktemp("original") / "compacted-0"
    log = Log.open(directory, LogConfig(**CONFIG))
    sequence = 0
    for batch in range(300):
        pairs = []
        for _ in range(10):
            key = b"key-%03d" % (sequence % KEYS)
            value = None if sequence % 97 == 0 else b"value-%06d" % sequence
            pairs.append((key, value))
            sequence += 1
        log.append(keyed_batch(pairs, timestamp=1_000 + batch), 0)
    log.roll()
    expected = latest_of(log)
    log.flush()
    log.close()
    return directory, expected


def kill_cleaner(original: Path, work: Path, mode: str, point: int) -> Path:
    copy = work / original.name
    shutil.copytree(original, copy)
    done = subprocess.run([sys.executable, "-c", CLEANER, str(copy), mode, str(point)],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    return copy


def check_recovered(copy: Path, expected: dict) -> None:
    log = Log.open(copy, LogConfig(**CONFIG), clean_shutdown=False)
    try:
        assert latest_of(log) == expected  # CRCs valid, offsets increasing, latest values kept
        assert not [n for n in os.listdir(copy) if n.endswith((".cleaned", ".swap"))]
        assert log.log_end_offset == 3000
        result = clean(log)
        assert result.completed
        assert latest_of(log) == expected
        assert len(records_of(read_batches(log))) == KEYS
    finally:
        log.close()


# Steps (this log's pass has 650): in the producer scan (1-25), the offset
# map (26-325), writing the first group, after its files were fsynced but
# before its swap (339), after the first swap, a later group, before the
# last swap (651).
@pytest.mark.parametrize("point", [2, 200, 330, 339, 352, 500, 651])
def test_sigkill_at_a_step_of_the_pass_leaves_a_valid_log(original, tmp_path, point):
    directory, expected = original
    check_recovered(kill_cleaner(directory, tmp_path, "step", point), expected)


# Renames: every boundary inside the first swap, and some in later ones.
@pytest.mark.parametrize("point", [1, 2, 3, 4, 6, 7, 8, 9, 13, 16, 31])
def test_sigkill_between_the_renames_of_a_swap_leaves_a_valid_log(original, tmp_path, point):
    directory, expected = original
    copy = kill_cleaner(directory, tmp_path, "rename", point)
    # From the 4th rename of a swap on, the swap was decided: the loader
    # must finish it; before, it must drop the .cleaned files.
    decided = (point - 1) % 9 + 1 >= 4
    assert any(name.endswith(".log.swap") for name in os.listdir(copy)) == decided
    assert any(name.endswith(".log.cleaned") for name in os.listdir(copy)) == (not decided)
    check_recovered(copy, expected)

"""Old segments open lazily (Kafka's LazyIndex): one descriptor per
segment, indexes mapped on first use, and rebuilt then when they are
damaged."""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.log.offset_index import OffsetIndex
from kcore.log.time_index import TimeIndex
from tests.support.log import assert_prefix_of_written_batches, batch_for, read_slices

ONE = len(batch_for(0))
# Five batches per segment, an index entry every batch after the first.
CONFIG = LogConfig(segment_bytes=5 * ONE, index_interval_bytes=1)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def read_batch(log: Log, offset: int) -> bytes:
    """The batch holding ``offset`` from its length field on (the base
    offset before it is patched by the append)."""
    return read_slices(log.read(offset, ONE))[8:]


def written(offset: int) -> bytes:
    return bytes(batch_for(offset))[8:]


def write_closed_log(directory: Path, count: int = 25) -> None:
    log = Log.open(directory, CONFIG)
    for offset in range(count):
        log.append(batch_for(offset), 0)
    log.flush()
    log.close()


def reopen(directory: Path) -> Log:
    return Log.open(directory, CONFIG, recovery_point=25, clean_shutdown=True)


def test_old_segments_hold_one_descriptor_and_no_index_until_used(tmp_path):
    write_closed_log(tmp_path / "t-0")
    before = open_fds()
    log = reopen(tmp_path / "t-0")
    assert len(log.segments) == 5
    assert open_fds() - before == 5  # the .log files: indexes hold no descriptor
    old = log.segments[1]
    assert old._offset_index is None and old._time_index is None
    assert read_batch(log, 7) == written(7)
    assert old._offset_index is not None and old._offset_index.entries == 4
    assert open_fds() - before == 5
    log.close()


def test_lookups_in_old_segments_after_a_restart_match_the_data(tmp_path):
    write_closed_log(tmp_path / "t-0")
    log = reopen(tmp_path / "t-0")
    for offset in range(25):
        assert read_batch(log, offset) == written(offset)
        # batch_for(offset) carries timestamp 1000 + offset.
        assert log.offset_for_timestamp(1000 + offset) == (offset, 1000 + offset)
    assert log.offset_of_max_timestamp() == (24, 1024)
    log.close()


@pytest.mark.parametrize("damage", ["out-of-order", "past-the-data", "missing", "partial"])
def test_a_damaged_index_of_an_old_segment_is_rebuilt_when_first_used(tmp_path, damage, caplog):
    write_closed_log(tmp_path / "t-0")
    index_path = tmp_path / "t-0" / f"{5:020d}.index"
    good = index_path.read_bytes()
    if damage == "out-of-order":
        index_path.write_bytes(good[8:16] + good[:8] + good[16:])
    elif damage == "past-the-data":
        relative, position = struct.unpack_from(">ii", good, len(good) - 8)
        index_path.write_bytes(good[:-8] + struct.pack(">ii", relative, position + 1))
    elif damage == "missing":
        index_path.unlink()
    else:
        index_path.write_bytes(good + b"\x01\x02\x03")
    log = reopen(tmp_path / "t-0")
    assert log.segments[1]._offset_index is None  # nothing checked at start
    assert read_batch(log, 8) == written(8)
    assert "rebuilding" in caplog.text
    assert index_path.read_bytes() == good
    assert_prefix_of_written_batches(log)
    log.close()


def test_corrupt_data_in_an_old_segment_is_a_storage_error_not_a_cut(tmp_path):
    from kcore.log.errors import KafkaStorageError
    write_closed_log(tmp_path / "t-0")
    directory = tmp_path / "t-0"
    (directory / f"{5:020d}.index").unlink()
    data_path = directory / f"{5:020d}.log"
    data = bytearray(data_path.read_bytes())
    data[2 * ONE + 100] ^= 0x40
    data_path.write_bytes(bytes(data))
    log = reopen(directory)
    with pytest.raises(KafkaStorageError):
        log.read(6, ONE)
    assert data_path.stat().st_size == len(data)
    log.close()


def test_an_inactive_index_maps_its_file_and_closes_the_descriptor(tmp_path):
    path = tmp_path / f"{0:020d}.index"
    index = OffsetIndex(path, 0, 8 * 100, appendable=True)
    for i in range(1, 6):
        index.append(i, i * 10)
    index.trim()
    before = open_fds()
    reopened = OffsetIndex(path, 0, 8 * 100)
    assert open_fds() == before
    assert reopened.entries == 5 and not reopened.active and reopened.lookup(3) == (3, 30)
    reopened.close()


def test_an_active_index_writes_only_its_entries_and_cuts_removed_ones(tmp_path):
    path = tmp_path / f"{0:020d}.timeindex"
    index = TimeIndex(path, 0, 12 * 100, appendable=True)
    for i in range(1, 6):
        index.maybe_append(100 * i, i)
    assert os.path.getsize(path) == 0
    index.sync()
    assert os.path.getsize(path) == 5 * 12
    index.truncate_to(3)
    index.sync()
    assert os.path.getsize(path) == 2 * 12
    index.close()
    assert TimeIndex(path, 0, 12 * 100).last_entry() == (200, 2)

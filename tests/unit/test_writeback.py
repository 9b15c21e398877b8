"""Write-behind (kcore/log/writeback.py): each log's appends are handed to
a worker thread in steps of log.writeback.interval.bytes. The native calls
are the real ones, recorded on the way through."""
from __future__ import annotations

import errno
import os
import threading

import pytest

from kcore._native import append as native_append
from kcore.config import BrokerConfig
from kcore.log import writeback
from kcore.log.manager import LogManager
from kcore.log.writeback import PAGE_BYTES, WriteBehind
from tests.support.batches import make_batch

STEP = 64 * 1024


@pytest.fixture
def started(monkeypatch):
    """(fd, position, length, thread name, result) of each start_writeback."""
    calls: list[tuple[int, int, int, str, int]] = []
    real = native_append.start_writeback

    def recording(fd: int, position: int, length: int) -> int:
        result = real(fd, position, length)
        calls.append((fd, position, length, threading.current_thread().name, result))
        return result

    monkeypatch.setattr(native_append, "start_writeback", recording)
    return calls


def append_bytes(log, total: int) -> None:
    while log.active_segment.size < total:
        log.append(make_batch(4, value_bytes=4000), 0)


def test_appends_are_handed_to_the_worker_in_steps_covering_the_segment(tmp_path, started):
    manager = LogManager([tmp_path], writeback_interval_bytes=STEP)
    log = manager.get_or_create_log("t", 0)
    append_bytes(log, 5 * STEP)
    segment = log.active_segment
    manager.write_behind.close()  # the worker has made every call handed to it
    assert started, "nothing was written back"
    assert {(fd, name, result) for fd, _, _, name, result in started} == {
        (segment.fd, "kcore-writeback", 0)}
    positions = [(position, length) for _, position, length, _, _ in started]
    assert positions[0][0] == 0 and all(length >= STEP for _, length in positions)
    assert all(a + n == b for (a, n), (b, _) in zip(positions, positions[1:])), positions
    # Each step ends at a page boundary: the partly filled last page waits.
    assert all((a + n) % PAGE_BYTES == 0 for a, n in positions), positions
    end = positions[-1][0] + positions[-1][1]
    assert end == segment.written_back and segment.size - end < STEP + PAGE_BYTES
    assert manager.write_behind.started_bytes == end
    manager.shutdown()


def test_a_truncation_steps_back_and_the_next_steps_start_at_the_cut(tmp_path, started):
    manager = LogManager([tmp_path], writeback_interval_bytes=STEP)
    log = manager.get_or_create_log("t", 0)
    append_bytes(log, 3 * STEP)
    manager.write_behind.close()
    before = len(started)
    log.truncate_to(log.log_end_offset // 4)
    cut = log.active_segment.size
    assert log.active_segment.written_back == cut < started[before - 1][1]
    append_bytes(log, cut + 2 * STEP)
    manager.write_behind.close()  # a later append started the worker again
    after = [(position, length) for _, position, length, _, _ in started[before:]]
    assert after and after[0][0] == cut
    manager.shutdown()


def test_a_roll_starts_the_new_segment_from_its_start(tmp_path, started):
    manager = LogManager([tmp_path], {"segment.bytes": 3 * STEP}, writeback_interval_bytes=STEP)
    log = manager.get_or_create_log("t", 0)
    while len(log._segments) < 3:
        log.append(make_batch(4, value_bytes=4000), 0)
    manager.write_behind.close()
    by_fd: dict[int, list[int]] = {}
    for fd, position, _, _, _ in started:
        by_fd.setdefault(fd, []).append(position)
    first, second = (segment.fd for segment in log._segments[:2])
    assert by_fd[first][0] == 0 and by_fd[second][0] == 0
    manager.shutdown()


def test_zero_leaves_the_writeback_to_the_kernel(tmp_path, started):
    manager = LogManager([tmp_path])
    log = manager.get_or_create_log("t", 0)
    append_bytes(log, 3 * STEP)
    assert manager.write_behind is None and log.write_behind is None and started == []
    manager.shutdown()


def test_close_stops_the_worker_and_a_descriptor_that_is_no_file_is_an_errno(tmp_path):
    """A segment closed before the worker gets to its step (retention, a
    roll's close) costs the worker an EBADF, not an exception."""
    behind = WriteBehind(1)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"x" * 8192)
    os.close(fd)

    class Closed:  # what appended() reads of a segment
        written_back, size = 0, 8192
    Closed.fd = fd
    behind.appended(Closed)
    thread = behind._thread
    assert thread is not None and thread.is_alive()
    behind.close()
    assert not thread.is_alive() and Closed.written_back == 8192
    reading, writing = os.pipe()  # not a file: ESPIPE, returned rather than raised
    try:
        assert native_append.start_writeback(reading, 0, 8192) == errno.ESPIPE
    finally:
        os.close(reading)
        os.close(writing)
    with pytest.raises(ValueError):
        native_append.start_writeback(0, -1, 1)


def test_the_broker_setting_defaults_to_auto_and_refuses_below_it():
    assert BrokerConfig({})["log.writeback.interval.bytes"] == writeback.AUTO == -1
    assert BrokerConfig({"log.writeback.interval.bytes": "0"})["log.writeback.interval.bytes"] == 0
    with pytest.raises(ValueError, match="log.writeback.interval.bytes"):
        BrokerConfig({"log.writeback.interval.bytes": "-2"})
    assert writeback.interval_for(0, 512 << 20) == 0 and writeback.interval_for(4096, None) == 4096
    assert writeback.interval_for(writeback.AUTO, 512 << 20) == writeback.AUTO_INTERVAL_BYTES
    assert writeback.interval_for(writeback.AUTO, None) == 0

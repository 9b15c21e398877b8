"""The aborted-transaction index (kcore/log/txn_index.py): Kafka's 34-byte
entries, appends in marker order, a torn last entry from a crash, truncation
with the log, the ranges a read_committed fetch collects, and the index
across a log's segments (Log.append_aborted_txn / collect_aborted_txns)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.log.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex
from tests.support.batches import make_batch

ENTRIES = [AbortedTxn(7, 0, 5, 6), AbortedTxn(8, 3, 10, 11), AbortedTxn(7, 12, 20, 21)]


def index_with(tmp_path, entries=ENTRIES, name="00000000000000000000.txnindex") -> TransactionIndex:
    index = TransactionIndex(tmp_path / name)
    for entry in entries:
        index.append(entry)
    return index


def test_entries_are_kafkas_34_byte_layout(tmp_path):
    index = index_with(tmp_path, ENTRIES[:1])
    assert ENTRY_SIZE == 34
    assert index.path.read_bytes() == struct.pack(">hqqqq", 0, 7, 0, 5, 6)


def test_entries_are_read_back_by_a_new_instance(tmp_path):
    index_with(tmp_path).flush()
    again = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert again.entries == ENTRIES and again.last_offset == 20


def test_no_file_until_the_first_abort(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert index.entries == [] and index.last_offset == -1 and not index.path.exists()
    index.flush()
    assert not index.path.exists()


def test_appends_must_follow_the_last_marker(tmp_path):
    index = index_with(tmp_path)
    with pytest.raises(ValueError):
        index.append(AbortedTxn(9, 15, 20, 21))
    assert index.entries == ENTRIES


@pytest.mark.parametrize("torn_bytes", [1, 17, ENTRY_SIZE - 1])
def test_a_torn_last_entry_is_ignored_then_cut_by_the_next_append(tmp_path, torn_bytes):
    path = tmp_path / "00000000000000000000.txnindex"
    index_with(tmp_path, ENTRIES[:2])
    with open(path, "ab") as handle:
        handle.write(struct.pack(">hqqqq", 0, *ENTRIES[2])[:torn_bytes])
    reopened = TransactionIndex(path)
    assert reopened.entries == ENTRIES[:2]
    reopened.append(ENTRIES[2])
    assert path.stat().st_size == 3 * ENTRY_SIZE
    assert TransactionIndex(path).entries == ENTRIES


def test_an_entry_of_an_unknown_version_ends_what_is_read(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index_with(tmp_path, ENTRIES[:1])
    with open(path, "ab") as handle:
        handle.write(struct.pack(">hqqqq", 1, *ENTRIES[1]) + struct.pack(">hqqqq", 0, *ENTRIES[2]))
    assert TransactionIndex(path).entries == ENTRIES[:1]


def test_truncate_drops_the_markers_at_or_after_the_offset(tmp_path):
    index = index_with(tmp_path)
    index.truncate_to(21)
    assert index.entries == ENTRIES
    index.truncate_to(20)
    assert index.entries == ENTRIES[:2] and index.path.stat().st_size == 2 * ENTRY_SIZE
    assert TransactionIndex(index.path).entries == ENTRIES[:2]
    index.truncate_to(5)
    assert index.entries == [] and not index.path.exists()
    index.append(AbortedTxn(9, 1, 2, 3))  # and it starts again
    assert TransactionIndex(index.path).entries == [AbortedTxn(9, 1, 2, 3)]


@pytest.mark.parametrize(("fetch_offset", "upper", "expected"), [
    (0, 1, [0]), (0, 4, [0, 1]), (5, 6, [0, 1]), (6, 12, [1]), (11, 12, []), (11, 13, [2]),
    (21, 30, []), (0, 100, [0, 1, 2]), (0, 0, [])])
def test_collect_returns_the_entries_overlapping_the_fetch(tmp_path, fetch_offset, upper, expected):
    assert index_with(tmp_path).collect(fetch_offset, upper) == [ENTRIES[i] for i in expected]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 20)), max_size=12),
       st.integers(0, 400), st.integers(0, 400))
def test_collect_matches_an_overlap_oracle(tmp_path_factory, spans, fetch_offset, upper):
    entries, marker = [], 0
    for gap, length in spans:
        first = marker + gap
        marker = first + length
        entries.append(AbortedTxn(1, first, marker, marker + 1))
    index = index_with(tmp_path_factory.mktemp("idx"), entries)
    expected = [e for e in entries
                if set(range(e.first_offset, e.last_offset + 1)) & set(range(fetch_offset, upper))]
    assert index.collect(fetch_offset, upper) == expected


def test_rename_and_delete(tmp_path):
    index = index_with(tmp_path)
    target = tmp_path / "00000000000000000000.txnindex.deleted"
    index.rename_to(target)
    assert target.exists() and index.path == target
    index.delete()
    assert not target.exists() and index.entries == []


# -- across a log's segments ----------------------------------------------------------------------
def log_of(tmp_path, batches: int) -> Log:
    """A log of ``batches`` one-record batches, a segment per ~3 batches."""
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * len(make_batch(1)) + 1))
    for offset in range(batches):
        log.append(make_batch(1, base_offset=offset), leader_epoch=0)
    return log


def test_each_abort_goes_to_the_segment_of_its_marker(tmp_path):
    log = log_of(tmp_path, 12)
    assert len(log.segments) >= 3
    for entry in (AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 2, 4, 5), AbortedTxn(3, 5, 9, 10)):
        log.append_aborted_txn(entry)
    by_segment = {s.base_offset: s.txn_index.entries for s in log.segments if s.txn_index.entries}
    assert all(e.last_offset >= base for base, entries in by_segment.items() for e in entries)
    assert sum(len(v) for v in by_segment.values()) == 3
    assert log.collect_aborted_txns(0, 12) == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 2, 4, 5),
                                               AbortedTxn(3, 5, 9, 10)]
    # A transaction that began in an earlier segment is found from a later fetch offset.
    assert log.collect_aborted_txns(7, 8) == [AbortedTxn(3, 5, 9, 10)]
    assert log.collect_aborted_txns(10, 12) == []


def test_an_abort_indexed_already_or_outside_the_log_is_ignored(tmp_path):
    log = log_of(tmp_path, 6)
    log.append_aborted_txn(AbortedTxn(1, 0, 3, 4))
    log.append_aborted_txn(AbortedTxn(1, 0, 3, 4))  # replayed after a restart
    log.append_aborted_txn(AbortedTxn(2, 0, 2, 4))  # older than the last one indexed
    log.append_aborted_txn(AbortedTxn(3, 5, 6, 7))  # marker past the log end
    assert log.collect_aborted_txns(0, 6) == [AbortedTxn(1, 0, 3, 4)]


def test_aborts_are_kept_by_a_reopened_log_and_cut_by_truncation(tmp_path):
    log = log_of(tmp_path, 12)
    log.append_aborted_txn(AbortedTxn(1, 0, 4, 5))
    log.append_aborted_txn(AbortedTxn(2, 6, 10, 11))
    log.flush()
    log.close()
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * len(make_batch(1)) + 1))
    assert log.collect_aborted_txns(0, 12) == [AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 6, 10, 11)]
    log.truncate_to(8)
    assert log.collect_aborted_txns(0, 12) == [AbortedTxn(1, 0, 4, 5)]
    log.append(make_batch(1, base_offset=8), leader_epoch=0)
    log.append(make_batch(1, base_offset=9), leader_epoch=0)
    log.append_aborted_txn(AbortedTxn(3, 8, 9, 10))  # later markers are indexed again
    assert log.collect_aborted_txns(0, 10) == [AbortedTxn(1, 0, 4, 5), AbortedTxn(3, 8, 9, 10)]


def test_a_failed_append_keeps_the_entry_and_flush_writes_it_when_it_can(tmp_path):
    # The file's place is taken by a directory: every write fails for real,
    # as on a full disk, until it is removed.
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    assert index.entries == []
    path.mkdir()
    with pytest.raises(OSError):
        index.append(ENTRIES[0])
    index.append(ENTRIES[1])              # not written either: the file lacks the first
    assert index.entries == ENTRIES[:2]
    assert index.collect(0, 6) == ENTRIES[:2]
    with pytest.raises(OSError):
        index.flush()                     # still failing: the flush says so
    path.rmdir()
    index.flush()
    assert TransactionIndex(path).entries == ENTRIES[:2]
    index.append(ENTRIES[2])              # written at once again
    assert TransactionIndex(path).entries == ENTRIES

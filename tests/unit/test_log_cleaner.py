"""Compaction of a Log by the cleaner pass: latest value per key, offsets
kept, tombstones and their delete horizon, the active segment, producer
batches, transactions, compression, segment merging."""
from __future__ import annotations

import os

import pytest

from kcore.log.cleaner_records import has_null_key
from kcore.log.cleaner_task import UnreadableBatchError
from kcore.log.txn_index import AbortedTxn
from kcore.protocol.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType
from kcore.protocol.records import ControlType, Record, build_batch, build_control_batch
from tests.support.bombs import bomb_batch
from tests.support.cleaner import clean, fill, keyed_batch, latest_of, read_batches, records_of

COMPACT = dict(cleanup_policy="compact", file_delete_delay_ms=0)


def test_a_million_records_over_10k_keys_compact_to_exactly_the_latest_value_per_key(open_log):
    log = open_log(segment_bytes=4 << 20, **COMPACT)
    expected = fill(log, batches=1000, per_batch=1000, keys=10_000)
    log.roll()
    size_before = log.size_in_bytes
    result = clean(log)
    assert result.completed and result.stats.records_read == 1_000_000
    assert latest_of(log) == expected
    assert len(records_of(read_batches(log))) == 10_000
    assert log.log_end_offset == 1_000_000
    assert log.size_in_bytes < size_before / 50


def test_offsets_and_batch_bounds_survive_compaction(open_log):
    log = open_log(segment_bytes=8192, **COMPACT)
    fill(log, batches=60, per_batch=10, keys=25)
    log.roll()
    before = {batch.base_offset: batch for batch in read_batches(log)}
    end = log.log_end_offset
    clean(log)
    after = read_batches(log)
    assert after, "the latest records stay"
    for batch in after:
        original = before[batch.base_offset]
        assert batch.last_offset_delta == original.last_offset_delta
        assert batch.max_timestamp == original.max_timestamp
        original_records = {r.offset: r for r in original.records()}
        for record in batch.records():
            assert original_records[record.offset] == record
    assert log.log_end_offset == end
    # Reading from any original offset gives the first batch at or after it.
    for offset in range(0, end, 37):
        first = read_batches(log, offset)[0]
        assert first.last_offset >= offset
        assert all(b.last_offset < offset for b in after if b.base_offset < first.base_offset)


def test_the_active_segment_is_never_touched(open_log):
    log = open_log(**COMPACT)
    fill(log, batches=20, per_batch=5, keys=3)  # one segment: the active one
    before = [batch.to_bytes() for batch in read_batches(log)]
    result = clean(log)
    assert result.stats.segments == 0
    assert [batch.to_bytes() for batch in read_batches(log)] == before


def test_tombstones_stay_until_delete_retention_ms_after_their_first_cleaning(open_log):
    log = open_log(segment_bytes=4096, delete_retention_ms=5_000, **COMPACT)
    log.append(keyed_batch([(b"gone", b"v1"), (b"kept", b"v1")], timestamp=1_000), 0)
    log.append(keyed_batch([(b"gone", None)], timestamp=2_000), 0)
    log.roll()
    first = clean(log, now_ms=10_000)
    assert first.next_delete_horizon_ms == 15_000
    batches = read_batches(log)
    tombstone_batch = [b for b in batches if any(r.value is None for r in b.records())][0]
    assert tombstone_batch.delete_horizon_ms == 15_000
    assert tombstone_batch.records()[0].timestamp == 2_000  # deltas re-based on the horizon
    assert latest_of(log) == {b"gone": (2, None), b"kept": (1, b"v1")}

    clean(log, now_ms=14_999)
    assert latest_of(log) == {b"gone": (2, None), b"kept": (1, b"v1")}
    last = clean(log, now_ms=15_000)
    assert latest_of(log) == {b"kept": (1, b"v1")}
    assert last.next_delete_horizon_ms is None
    assert log.log_end_offset == 3


def test_keyless_records_are_dropped_and_detected(open_log):
    log = open_log(segment_bytes=4096, **COMPACT)
    batch = keyed_batch([(None, b"no key"), (b"k", b"v")])
    assert has_null_key(batch)
    assert not has_null_key(keyed_batch([(b"k", None)]))
    assert has_null_key(batch[:-3])  # unreadable records count as invalid too
    log.append(batch, 0)
    log.roll()
    clean(log)
    assert latest_of(log) == {b"k": (1, b"v")}


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.LZ4,
                                   CompressionType.ZSTD, CompressionType.SNAPPY])
def test_compressed_batches_are_rewritten_in_their_codec(open_log, codec):
    log = open_log(segment_bytes=1 << 16, **COMPACT)
    log.append(keyed_batch([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], codec=codec), 0)
    log.append(keyed_batch([(b"b", b"2")], codec=codec), 0)
    log.roll()
    clean(log)
    first = read_batches(log)[0]
    assert first.compression == codec
    assert [(r.offset, r.key, r.value) for r in first.records()] == [(0, b"a", b"1"), (2, b"c", b"1")]
    assert latest_of(log) == {b"a": (0, b"1"), b"b": (3, b"2"), b"c": (2, b"1")}


def test_a_producers_last_batch_is_kept_as_an_empty_header(open_log):
    log = open_log(segment_bytes=1 << 16, **COMPACT)
    for sequence in range(3):
        log.append(keyed_batch([(b"k", b"idempotent %d" % sequence)], producer_id=7,
                               producer_epoch=1, base_sequence=sequence), 0)
    log.append(keyed_batch([(b"k", b"newest")]), 0)
    log.roll()
    clean(log)
    batches = read_batches(log)
    assert [(b.base_offset, b.records_count, b.producer_id) for b in batches] == [(2, 0, 7), (3, 1, -1)]
    empty = batches[0]
    assert (empty.base_sequence, empty.producer_epoch, empty.last_offset_delta) == (2, 1, 0)
    assert latest_of(log) == {b"k": (3, b"newest")}


def test_aborted_transactions_are_removed_and_never_hide_a_committed_value(open_log):
    log = open_log(segment_bytes=1 << 16, delete_retention_ms=1_000, **COMPACT)
    log.append(keyed_batch([(b"k", b"committed")]), 0)                                   # 0
    log.append(keyed_batch([(b"k", b"aborted")], producer_id=5, producer_epoch=0,
                           base_sequence=0, is_transactional=True), 0)                    # 1
    log.append(build_control_batch(ControlType.ABORT, producer_id=5, producer_epoch=0), 0)  # 2
    log.append_aborted_txn(AbortedTxn(5, 1, 2, 3))  # what the partition indexes at the marker
    log.append(keyed_batch([(b"j", b"txn")], producer_id=6, producer_epoch=0,
                           base_sequence=0, is_transactional=True), 0)                    # 3
    log.append(build_control_batch(ControlType.COMMIT, producer_id=6, producer_epoch=0), 0)  # 4
    log.append(keyed_batch([(b"j", b"later")]), 0)                                       # 5
    log.append(keyed_batch([(b"x", b"1")], producer_id=5, producer_epoch=0, base_sequence=1), 0)  # 6
    log.append(keyed_batch([(b"x", b"2")], producer_id=6, producer_epoch=0, base_sequence=1), 0)  # 7
    log.roll()
    clean(log, now_ms=10_000)
    offsets = [(b.base_offset, b.is_control) for b in read_batches(log)]
    # The aborted record goes; the committed value of its key stays.
    assert (0, False) in offsets and (1, False) not in offsets
    assert latest_of(log)[b"k"] == (0, b"committed")
    # Markers stay, stamped with a horizon; the committed txn record was superseded.
    assert (2, True) in offsets and (4, True) in offsets and (3, False) not in offsets
    markers = [b for b in read_batches(log) if b.is_control]
    assert all(b.delete_horizon_ms == 11_000 for b in markers)
    assert markers[0].control_type is ControlType.ABORT
    # The cleaned segment still indexes the abort (a fetch from before it needs it).
    assert [t.producer_id for t in log.collect_aborted_txns(0, 8)] == [5]

    clean(log, now_ms=11_000)
    offsets = [(b.base_offset, b.is_control) for b in read_batches(log)]
    assert (2, True) not in offsets, "an abort marker whose records are gone goes after its horizon"
    assert (4, True) not in offsets, "a commit marker of an emptied transaction goes after its horizon"
    assert latest_of(log)[b"j"] == (5, b"later")


def test_an_aborted_producers_marker_outlives_its_horizon_as_its_last_batch(open_log):
    log = open_log(segment_bytes=1 << 16, delete_retention_ms=1_000, **COMPACT)
    log.append(keyed_batch([(b"k", b"aborted")], producer_id=9, producer_epoch=2,
                           base_sequence=4, is_transactional=True), 0)                    # 0
    log.append(build_control_batch(ControlType.ABORT, producer_id=9, producer_epoch=2), 0)  # 1
    log.append_aborted_txn(AbortedTxn(9, 0, 1, 2))
    log.append(keyed_batch([(b"k", b"other")]), 0)                                       # 2
    log.roll()
    clean(log, now_ms=0)
    clean(log, now_ms=5_000)
    batches = read_batches(log)
    assert [(b.base_offset, b.is_control) for b in batches] == [(1, True), (2, False)]
    assert (batches[0].producer_id, batches[0].producer_epoch) == (9, 2)


def test_cleaned_segments_merge_while_under_segment_bytes(open_log):
    log = open_log(segment_bytes=4096, **COMPACT)
    fill(log, batches=200, per_batch=4, keys=10)
    log.roll()
    segments_before = len(log.segments)
    clean(log)
    # Groups are sized by the segments before cleaning (as Kafka does) ...
    assert len(log.segments) == segments_before
    expected = fill(log, batches=200, per_batch=4, keys=10, start=800)
    log.roll()
    segments_before = len(log.segments)
    second = clean(log)
    # ... so the small cleaned segments merge on the next pass.
    assert second.stats.groups < second.stats.segments
    assert len(log.segments) < segments_before
    assert all(segment.size <= 4096 for segment in log.segments)
    assert latest_of(log) == expected


def test_a_full_offset_map_ends_the_pass_at_a_segment_boundary(open_log):
    log = open_log(segment_bytes=4096, **COMPACT)
    expected = fill(log, batches=100, per_batch=10, keys=1000)
    log.roll()
    first = clean(log, max_map_entries=50)
    assert first.completed and 0 < first.end_offset < log.active_segment.base_offset
    bases = [segment.base_offset for segment in log.segments]
    assert first.end_offset in bases
    while first.end_offset < log.active_segment.base_offset:
        first = clean(log, first_dirty=first.end_offset, max_map_entries=50)
    assert latest_of(log) == expected


def test_unchanged_batches_are_copied_byte_for_byte(open_log):
    log = open_log(segment_bytes=1 << 16, **COMPACT)
    log.append(keyed_batch([(b"a", b"1"), (b"b", b"1")], timestamp=5), 0)
    log.append(keyed_batch([(b"c", b"1")], timestamp=6), 0)
    log.roll()
    before = [b.to_bytes() for b in read_batches(log)]
    clean(log)
    assert [b.to_bytes() for b in read_batches(log)] == before


def test_no_cleaned_or_swap_files_are_left_behind(open_log):
    log = open_log(segment_bytes=4096, **COMPACT)
    fill(log, batches=50, per_batch=10, keys=7)
    log.roll()
    clean(log)
    leftovers = [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []


def test_records_built_with_explicit_gaps_round_trip(open_log):
    # A compacted batch appended by a replica keeps its gaps; cleaning it again is a no-op.
    log = open_log(segment_bytes=1 << 16, **COMPACT)
    batch = build_batch([Record(offset=0, key=b"a", value=b"1", timestamp=1),
                         Record(offset=4, key=b"b", value=b"2", timestamp=1)],
                        base_offset=0, last_offset_delta=6)
    log.append(batch, 0, assign_offsets=False, validate=False)
    log.roll()
    clean(log)
    (only,) = read_batches(log)
    assert (only.base_offset, only.last_offset) == (0, 6)
    assert [r.offset for r in only.records()] == [0, 4]


def test_a_batch_inflating_past_the_limit_stops_the_pass_and_leaves_the_log(open_log):
    """A compacted log holding a bomb (produced before the topic became
    compacted): the pass stops at it, as Kafka marks such a log
    uncleanable, and every batch stays as it was."""
    log = open_log(segment_bytes=4 << 20, **COMPACT)
    fill(log, batches=5, per_batch=10, keys=5)
    log.append(bomb_batch(CompressionType.ZSTD, 128), 0)  # 128 MiB, twice the limit
    fill(log, batches=5, per_batch=10, keys=5, start=50)
    log.roll()
    before = [batch.to_bytes() for batch in read_batches(log)]
    with pytest.raises(UnreadableBatchError, match=f"inflate past {DEFAULT_MAX_DECOMPRESSED_SIZE} bytes"):
        clean(log)
    assert [batch.to_bytes() for batch in read_batches(log)] == before

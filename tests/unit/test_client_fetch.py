"""records_from: records out of Fetch bytes (whole batches, offsets, markers)."""
from kcore.client.fetch import FetchedPartition, records_from
from kcore.protocol.compression import CompressionType
from kcore.protocol.constants import READ_COMMITTED, READ_UNCOMMITTED
from kcore.protocol.records import ControlType, Record, build_batch, build_control_batch


def _batch(base_offset, count, *, codec=CompressionType.NONE, producer_id=-1,
           transactional=False):
    records = [Record(timestamp=1000 + base_offset + i, key=b"k%d" % (base_offset + i),
                      value=b"v%d" % (base_offset + i)) for i in range(count)]
    return build_batch(records, base_offset=base_offset, codec=codec, producer_id=producer_id,
                       producer_epoch=0 if producer_id >= 0 else -1,
                       base_sequence=0 if producer_id >= 0 else -1,
                       is_transactional=transactional)


def _fetched(data, aborted=()):
    return FetchedPartition("t", 0, 0, 100, 100, 0, memoryview(bytes(data)), tuple(aborted))


def test_records_of_whole_batches_come_out_in_order():
    got = records_from(_fetched(_batch(0, 3) + _batch(3, 2)), 0)
    assert [r.offset for r in got.records] == [0, 1, 2, 3, 4]
    assert [r.value for r in got.records] == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert got.next_offset == 5
    assert got.whole_batches == 2 and not got.partial_batch


def test_records_below_the_fetch_offset_inside_a_batch_are_skipped():
    got = records_from(_fetched(_batch(10, 5, codec=CompressionType.LZ4)), 12)
    assert [r.offset for r in got.records] == [12, 13, 14]
    assert got.next_offset == 15


def test_batches_wholly_below_the_fetch_offset_are_skipped():
    got = records_from(_fetched(_batch(0, 2) + _batch(2, 2)), 2)
    assert [r.offset for r in got.records] == [2, 3]


def test_a_trailing_partial_batch_is_left_for_the_next_fetch():
    whole, second = _batch(0, 2), _batch(2, 3)
    got = records_from(_fetched(whole + second[:len(second) - 7]), 0)
    assert [r.offset for r in got.records] == [0, 1]
    assert got.next_offset == 2 and got.partial_batch


def test_only_a_partial_batch_keeps_the_fetch_offset():
    batch = _batch(7, 3)
    got = records_from(_fetched(batch[:40]), 7)
    assert got.records == [] and got.next_offset == 7
    assert got.whole_batches == 0 and got.partial_batch


def test_empty_records_keep_the_fetch_offset():
    got = records_from(_fetched(b""), 9)
    assert got.records == [] and got.next_offset == 9 and not got.partial_batch


def test_control_batches_are_not_records_but_advance_the_offset():
    data = _batch(0, 2, producer_id=5, transactional=True) + build_control_batch(
        ControlType.COMMIT, producer_id=5, producer_epoch=0, base_offset=2)
    got = records_from(_fetched(data), 0)
    assert [r.offset for r in got.records] == [0, 1]
    assert got.next_offset == 3


def test_read_committed_skips_aborted_transactions_only():
    data = (_batch(0, 2, producer_id=5, transactional=True)
            + _batch(2, 2, producer_id=6, transactional=True)
            + build_control_batch(ControlType.ABORT, producer_id=5, producer_epoch=0,
                                  base_offset=4)
            + build_control_batch(ControlType.COMMIT, producer_id=6, producer_epoch=0,
                                  base_offset=5)
            + _batch(6, 1, producer_id=5, transactional=True)
            + build_control_batch(ControlType.COMMIT, producer_id=5, producer_epoch=0,
                                  base_offset=7))
    fetched = _fetched(data, aborted=[(5, 0)])
    committed = records_from(fetched, 0, isolation_level=READ_COMMITTED)
    assert [r.offset for r in committed.records] == [2, 3, 6]
    assert committed.next_offset == 8
    uncommitted = records_from(fetched, 0, isolation_level=READ_UNCOMMITTED)
    assert [r.offset for r in uncommitted.records] == [0, 1, 2, 3, 6]

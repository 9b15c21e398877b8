"""A fetch's data on disk is read by a worker thread before the fetch is
answered (kcore/handlers/fetch_cold.py, Log.cold_extent), so that locating
its batches does not wait for the disk on the event loop. Real segment
files whose pages are dropped (fsync, then POSIX_FADV_DONTNEED)."""
from __future__ import annotations

import asyncio
import os

from kcore.config import BrokerConfig
from kcore.handlers.fetch_cold import read_cold_first
from kcore.log.file_slice import pages_cached
from kcore.log.log import HOT_TAIL_BYTES, Log
from kcore.replication.partition import Partition
from tests.support.batches import make_batch

BATCH_RECORDS, VALUE_BYTES = 16, 1000  # ~16 KiB batches
MIB = 1024 * 1024


def filled_partition(tmp_path, size: int) -> Partition:
    """One partition of ``size`` bytes or so, in one segment, none cached."""
    partition = Partition("cold", 0, Log.open(tmp_path / "cold-0"), BrokerConfig({}).topic_defaults(), broker_id=0)
    while partition.log.active_segment.size < size:
        partition.log.append(make_batch(BATCH_RECORDS, VALUE_BYTES), leader_epoch=0)
    drop_pages(partition.log)
    return partition


def drop_pages(log: Log) -> None:
    fd = log.active_segment.fd
    os.fsync(fd)  # clean pages: DONTNEED drops them
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def offset_at(log: Log, position: int) -> int:
    """The first offset of the batch holding ``position``, from the index."""
    index = log.active_segment.offset_index
    return max(offset for offset, at in (index.entry(slot) for slot in range(index.entries)) if at <= position)


def test_a_read_far_from_the_end_of_uncached_pages_is_cold(tmp_path):
    partition = filled_partition(tmp_path, 4 * MIB)
    log, fd = partition.log, partition.log.active_segment.fd
    try:
        extent = log.cold_extent(0, MIB)
        assert extent is not None and (extent.fd, extent.position) == (fd, 0)
        assert MIB < extent.size < MIB + 100  # max_bytes and a batch header more
        middle = offset_at(log, 2 * MIB)
        extent = log.cold_extent(middle, MIB)
        assert extent is not None and 2 * MIB - 64 * 1024 <= extent.position <= 2 * MIB  # from its index entry

        os.pread(fd, 4096, 0)  # its first page cached: no longer cold
        assert log.cold_extent(0, MIB) is None
        near_end = offset_at(log, log.active_segment.size - HOT_TAIL_BYTES // 2)
        assert log.cold_extent(near_end, MIB) is None  # the tail: not even probed
        assert log.cold_extent(log.log_end_offset, MIB) is None
    finally:
        partition.close()


def test_the_cold_extents_are_read_into_the_page_cache_within_the_fetch_budget(tmp_path):
    partition = filled_partition(tmp_path, 4 * MIB)
    fd = partition.log.active_segment.fd
    try:
        read = asyncio.run(read_cold_first([(None, 0, MIB), (partition, 0, MIB)], max_bytes=MIB // 2))
        assert MIB // 2 <= read <= MIB // 2 + 100  # the answer's max bytes bound it, not the partition's
        assert pages_cached(fd, 0, MIB // 2)
        # Nothing far beyond what the fetch may read (the kernel's own
        # read-ahead, 128 KiB by default, may take a little more).
        assert not pages_cached(fd, 3 * MIB, MIB // 2)

        drop_pages(partition.log)
        reads = [(partition, 0, MIB), (partition, offset_at(partition.log, 2 * MIB), MIB)]
        assert asyncio.run(read_cold_first(reads, max_bytes=4 * MIB)) > 2 * MIB
        assert pages_cached(fd, 0, MIB) and pages_cached(fd, 2 * MIB, MIB - 64 * 1024)
        assert asyncio.run(read_cold_first(reads, max_bytes=4 * MIB)) == 0  # cached now: nothing to do
    finally:
        partition.close()

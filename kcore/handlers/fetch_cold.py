"""Reading a fetch's cold data on a worker thread before the fetch is
answered.

Locating a partition's batches for a fetch reads their headers from the
segment file (the offset index is sparse: a header every 4 KiB or so is
read to find the first batch, and more to find where ``max_bytes`` ends),
with pread on the event loop. For data in the page cache that takes
microseconds; for data on disk each read waits for it, and every produce
and fetch of every connection waits too. In bench/bench_backlog.py (a
consumer 2.1 GB behind, the broker's page cache held to 512 MB) the event
loop spent 37 of 1,856 samples (every ~8 ms) waiting in such a pread.

So before a fetch's first pass, each partition to be read is checked
(``Log.cold_extent``: an index lookup and one RWF_NOWAIT probe, skipped
for a read within a MiB of the log's end); the extents that are on disk
are read by a worker thread, whose reads bring them into the page cache,
and the pass that follows finds them there. The sending of those bytes
then takes the cached path (sendfile) too.

Reads race nothing: a segment closed meanwhile makes its pread fail (or
read another file, which is harmless: the bytes are dropped), and the
fetch then reads as it always did.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from kcore.log.file_slice import FileSlice
from kcore.replication.partition import Partition

# Reads of one fetch go to one thread in turn (the disk orders them
# anyway); two threads let two consumers' fetches wait at once.
COLD_FETCH_THREADS = 2
READ_CHUNK = 1024 * 1024
_executors: list[ThreadPoolExecutor] = []


async def read_cold_first(reads: Iterable[tuple[Partition | None, int, int]], max_bytes: int) -> int:
    """``reads``: (partition, fetch offset, partition max bytes) of a fetch
    whose answer holds at most ``max_bytes``. Returns once the extents that
    were on disk are in the page cache (or failed to be read): the bytes
    read."""
    extents: list[FileSlice] = []
    budget = max_bytes
    for partition, offset, partition_max_bytes in reads:
        if budget <= 0:
            break
        if partition is None or partition.log is None:
            continue
        try:
            extent = partition.log.cold_extent(offset, min(partition_max_bytes, budget))
        except Exception:  # noqa: BLE001 - the read that follows reports it
            continue
        if extent is not None:
            extents.append(extent)
            budget -= extent.size
    if not extents:
        return 0
    return await asyncio.get_running_loop().run_in_executor(_executor(), _read, extents)


def _read(extents: list[FileSlice]) -> int:
    """On a worker thread: read each extent, dropping the bytes; how many."""
    total = 0
    for extent in extents:
        position, end = extent.position, extent.position + extent.size
        try:
            while position < end:
                got = len(os.pread(extent.fd, min(READ_CHUNK, end - position), position))
                if not got:
                    break
                position += got
        except OSError:
            pass
        total += position - extent.position
    return total


def _executor() -> ThreadPoolExecutor:
    if not _executors:
        _executors.append(ThreadPoolExecutor(COLD_FETCH_THREADS, thread_name_prefix="kcore-cold-fetch"))
    return _executors[0]

"""Write-behind: a segment's appended bytes go to disk in steps of
``log.writeback.interval.bytes``, soon after they are appended, instead of
when the kernel's dirty thresholds say (10% of the available memory, or
30 s: ``vm.dirty_background_ratio``, ``vm.dirty_expire_centisecs``).

Why: a broker whose memory is limited (a container's memory cgroup at its
limit) has no background reclaim; the thread that needs a page reclaims one,
and a dirty page it meets makes it wait for that page's writeback. The
event loop appending a produce request, or the kernel reading ahead for a
fetch, then stops every request. Pages written back soon after their append
are clean when reclaim reaches them. The flush pass after a roll also finds
little left to write. RocksDB does the same (``bytes_per_sync``); Kafka
leaves it to the kernel, as 0 does here.

The call queues the writeback and returns, but may wait for the device's
queue, so one worker thread per process makes it. A descriptor closed (or
its number reused) before the worker gets to it fails with EBADF, or starts
writing some other file's dirty pages: both harmless. Nothing here is about
durability: flush and fsync stay as they were.
"""
from __future__ import annotations

import os
import threading
from queue import SimpleQueue

from kcore._native import append as native_append

_STOP = None


class WriteBehind:
    """Starts the writeback of each segment's appends every ``interval_bytes``."""

    def __init__(self, interval_bytes: int):
        if interval_bytes <= 0:
            raise ValueError("interval_bytes must be > 0")
        self.interval_bytes = interval_bytes
        self._queue: SimpleQueue[tuple[int, int, int] | None] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0  # the process the thread runs in (a fork has none)
        self.started_bytes = 0  # what was handed to the worker (tests, metrics)

    def appended(self, segment) -> None:
        """After an append to ``segment``: hand what it holds past its last
        step to the worker, once that is ``interval_bytes`` or more."""
        start = segment.written_back
        if segment.size - start >= self.interval_bytes:
            length = segment.size - start
            segment.written_back = segment.size
            self.started_bytes += length
            self._submit(segment.fd, start, length)

    def _submit(self, fd: int, position: int, length: int) -> None:
        if self._thread is None or self._pid != os.getpid():
            self._queue = SimpleQueue()
            self._thread = threading.Thread(target=_work, args=(self._queue,),
                                            name="kcore-writeback", daemon=True)
            self._pid = os.getpid()
            self._thread.start()
        self._queue.put((fd, position, length))

    def close(self) -> None:
        """Stop the worker once it has started what was handed to it."""
        thread, self._thread = self._thread, None
        if thread is not None and self._pid == os.getpid():
            self._queue.put(_STOP)
            thread.join()


def _work(queue: SimpleQueue[tuple[int, int, int] | None]) -> None:
    while (item := queue.get()) is not _STOP:
        native_append.start_writeback(*item)

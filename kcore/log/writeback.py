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

It is not free: the writeback's CPU (ext4 allocating the blocks, the block
layer) is then spent while the broker runs, by its worker thread, where the
kernel would spend it later on its own threads, or never, for data deleted
first. At the full produce rate on 2 cores that cost 0.81x the produce
MB/s. So the default (-1) turns it on only where it pays: in a memory
cgroup limited below the machine's memory, where the appends would meet
reclaim anyway.

The call queues the writeback and returns, but may wait for the device's
queue, so one worker thread per process makes it. A descriptor closed (or
its number reused) before the worker gets to it fails with EBADF, or starts
writing some other file's dirty pages: both harmless. Nothing here is about
durability: flush and fsync stay as they were.
"""
from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from queue import SimpleQueue

from kcore._native import append as native_append

_STOP = None
AUTO = -1
AUTO_INTERVAL_BYTES = 1 << 20
PAGE_BYTES = mmap.PAGESIZE
CGROUP_ROOT = Path("/sys/fs/cgroup")


def interval_for(setting: int, memory_limit: int | None) -> int:
    """log.writeback.interval.bytes as it applies here: -1 (the default)
    is ``AUTO_INTERVAL_BYTES`` where a memory cgroup limits this process
    below the machine's memory (``memory_limit``, from
    ``memory_limit_bytes``), else 0 (off)."""
    if setting != AUTO:
        return setting
    return AUTO_INTERVAL_BYTES if memory_limit is not None else 0


def memory_limit_bytes() -> int | None:
    """The tightest limit of this process's memory cgroup and its
    ancestors (v1 ``memory.limit_in_bytes``, v2 ``memory.max``) when it is
    below the machine's memory; None where there is none or it cannot be
    read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        total = _mem_total_bytes()
    except (OSError, ValueError):
        return None
    limits: list[int] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # the v2 hierarchy
            limits += _limits_up(CGROUP_ROOT, path, "memory.max")
        elif "memory" in controllers.split(","):
            limits += _limits_up(CGROUP_ROOT / "memory", path, "memory.limit_in_bytes")
    below = [limit for limit in limits if limit < total]
    return min(below) if below else None


def _limits_up(root: Path, path: str, name: str) -> list[int]:
    """The limits set in ``name`` from the cgroup at ``path`` up to ``root``
    ("max", v1's huge number or an unreadable file: none)."""
    found = []
    directory = root / path.lstrip("/")
    while True:
        try:
            text = (directory / name).read_text().strip()
            if text != "max":
                found.append(int(text))
        except (OSError, ValueError):
            pass
        if directory == root or root not in directory.parents:
            return found
        directory = directory.parent


def _mem_total_bytes() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise ValueError("no MemTotal in /proc/meminfo")


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
        step to the worker, once that is ``interval_bytes`` or more. The
        step ends at a page boundary: the last page, partly filled, is
        written again by the next append, and is left for the next step
        (a page under writeback can make that append wait for it)."""
        start = segment.written_back
        end = segment.size - segment.size % PAGE_BYTES
        if end - start >= self.interval_bytes:
            segment.written_back = end
            self.started_bytes += end - start
            self._submit(segment.fd, start, end - start)

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

"""What the log hands the network layer for a fetch: a byte range of a
segment file, sent with sendfile(2) or read with pread(2)."""
from __future__ import annotations

import os
from typing import NamedTuple

# A range is probed for pages missing from the page cache one byte every
# COLD_PROBE_BYTES (and its last), each read with RWF_NOWAIT: ~1 us each.
COLD_PROBE_BYTES = 128 * 1024
_PROBE = bytearray(1)  # what the probes read into (event-loop thread only)


class FileSlice(NamedTuple):
    """``size`` bytes of the open file ``fd`` from ``position``, always whole
    RecordBatches. The fd belongs to the log: valid until the segment is
    deleted or the log closed (a retention pass defers removal by
    file.delete.delay.ms, so in-flight sends finish)."""

    fd: int
    position: int
    size: int


def pages_cached(fd: int, position: int, size: int) -> bool:
    """Whether ``size`` bytes of ``fd`` from ``position`` look cached: a
    byte of every COLD_PROBE_BYTES and the last, each read with RWF_NOWAIT
    (EAGAIN: on disk). A kernel or file system without RWF_NOWAIT for
    buffered reads, or a closed fd, answers True: the caller then reads
    as if cached, which is what it did before it asked."""
    end = position + size
    for offset in (*range(position, end, COLD_PROBE_BYTES), end - 1):
        try:
            os.preadv(fd, [_PROBE], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True
    return True

"""Twin of native/append.pyx: check every batch, then write them."""
from __future__ import annotations

import os

from kcore._native.twin.records import check_batch

# The native kernel overlaps the check with the write from this size on.
OVERLAP_BYTES = 262144


def append_batches(fd: int, buf, position: int, check_count: bool = True):
    """Twin of native append.append_batches: check every batch, then write
    (never overlapped, so ``written`` is always False on a failure)."""
    data = memoryview(buf).cast("B")
    offset = 0
    while offset < len(data):
        reason, size = check_batch(data, offset, check_count)
        if reason is not None:
            return reason, offset, False
        offset += size
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], position + done)
    return None

"""What the log hands the network layer for a fetch: a byte range of a
segment file, sent with sendfile(2) or read with pread(2)."""
from __future__ import annotations

from typing import NamedTuple


class FileSlice(NamedTuple):
    """``size`` bytes of the open file ``fd`` from ``position``, always whole
    RecordBatches. The fd belongs to the log: valid until the segment is
    deleted or the log closed (a retention pass defers removal by
    file.delete.delay.ms, so in-flight sends finish)."""

    fd: int
    position: int
    size: int

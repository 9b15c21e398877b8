"""Whether a write task's input from Spark ended or was cut short.

A Python data source's ``write`` reads its rows from the JVM over the
PySpark worker's socket, as one Arrow IPC stream. When the task fails
upstream of the writer (a UDF raises, a file cannot be read), the JVM
closes the socket between two batches and pyarrow reads that end of file
as the end of the stream: the rows simply stop, and the writer cannot tell
from them. When the input is complete, the JVM writes Arrow's
end-of-stream marker followed by its own END_OF_STREAM (-4) and keeps the
socket open for the worker's answer. So once the rows are exhausted, the
next bytes of the worker's input tell the two apart: some (END_OF_STREAM)
or none (end of file).

The stream belongs to PySpark's worker (pyspark/worker.py: the local
``input_data_stream`` of ``invoke_udf`` in 4.3, ``infile`` of ``main``
before), up the call stack of ``write``: a buffered reader whose
``peek`` looks without consuming what the worker reads next. Where it is
not found (another PySpark layout), the check says nothing.
"""
from __future__ import annotations

import sys
from types import FrameType
from typing import BinaryIO

# Local names of the worker's input stream, newest PySpark first.
STREAM_NAMES = ("input_data_stream", "infile")


def worker_input() -> BinaryIO | None:
    """The PySpark worker's input stream, if the calling task runs in one."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        for name in STREAM_NAMES:
            stream = frame.f_locals.get(name)
            if stream is not None and hasattr(stream, "peek"):
                return stream
        frame = frame.f_back
    return None


def cut_short(stream: BinaryIO | None) -> bool:
    """True when the worker's input is at end of file after the rows:
    the JVM closed it on a failure instead of finishing the stream. Call
    only once the rows are exhausted (it waits for the next bytes)."""
    if stream is None:
        return False
    try:
        return stream.peek(1) == b""  # type: ignore[attr-defined]
    except (OSError, ValueError):  # a reset or closed socket: no answer will be read either
        return True

"""kcore.spark.task_input over a real socket pair, as PySpark's worker
reads the JVM: a stream the JVM finished (END_OF_STREAM follows the rows)
against one it closed (end of file), and the worker's stream found by its
local name up the call stack."""
from __future__ import annotations

import socket
import struct

from kcore.spark import task_input

END_OF_STREAM = -4  # PySpark's SpecialLengths.END_OF_STREAM


def worker_stream(sent: bytes, close: bool):
    """The worker's end of a socket pair (a buffered reader, as PySpark's
    ``infile``), with ``sent`` on it and the JVM's end closed or not."""
    jvm, worker = socket.socketpair()
    jvm.sendall(sent)
    if close:
        jvm.close()
    return jvm, worker, worker.makefile("rb", 65536)


def test_a_finished_input_is_not_cut_short_and_keeps_its_bytes():
    jvm, worker, infile = worker_stream(struct.pack("!i", END_OF_STREAM), close=False)
    try:
        assert not task_input.cut_short(infile)
        assert struct.unpack("!i", infile.read(4))[0] == END_OF_STREAM  # peek consumed nothing
    finally:
        infile.close(), worker.close(), jvm.close()


def test_a_closed_input_is_cut_short():
    _, worker, infile = worker_stream(b"", close=True)
    try:
        assert task_input.cut_short(infile)
    finally:
        infile.close(), worker.close()


def test_without_a_stream_the_check_says_nothing():
    assert not task_input.cut_short(None)


def test_the_workers_stream_is_found_up_the_call_stack():
    def write() -> object:  # the data source's write, called by the worker's frames
        return task_input.worker_input()

    def main(infile) -> object:  # PySpark's worker names its input "infile" (or "input_data_stream")
        return write()

    jvm, worker, reader = worker_stream(b"", close=False)  # not named like the worker's
    try:
        assert main(reader) is reader
        assert write() is None  # outside a worker
    finally:
        reader.close(), worker.close(), jvm.close()

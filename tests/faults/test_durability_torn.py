"""A crash in the middle of writing the last batch, at every byte boundary
of it: the file ends there (a short write), or runs on with zeros (a
preallocated or extended file) or with stale bytes of an older batch.
Recovery keeps exactly the batches before it and appends continue at its
offset."""
from __future__ import annotations

import os
import shutil

import pytest

from kcore.log.config import LogConfig
from kcore.log.log import Log
from tests.support.log import assert_prefix_of_written_batches, batch_for

BATCHES = 6
CRC_AT = 17  # byte offset of the CRC-32C in a v2 batch header


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The bytes of a clean .log of BATCHES batches and where the last starts."""
    directory = tmp_path_factory.mktemp("torn") / "t-0"
    log = Log.open(directory, LogConfig())
    for offset in range(BATCHES):
        log.append(batch_for(offset), 0)
    last_start = log.read(BATCHES - 1, 1)[0].position
    data = open(log.active_segment.log_path, "rb").read()
    log.close()
    return data, last_start


def tails(data: bytes, last_start: int):
    """(name, file content) for every torn form of the last batch."""
    last = data[last_start:]
    stale = bytes(batch_for(BATCHES + 7))[:len(last)]
    for cut in range(len(last)):
        prefix = data[:last_start + cut]
        yield f"short-{cut}", prefix
        if any(last[cut:]):  # zeros where the batch has zeros is no tear
            yield f"zeros-{cut}", prefix + bytes(len(last) - cut)
        # Stale bytes from the CRC field on: cut earlier, the tail is a whole
        # self-consistent older batch (the CRC covers attributes onwards,
        # not baseOffset/length/epoch), which no check can tell from new.
        if cut > CRC_AT and stale[cut:] != last[cut:]:
            yield f"stale-{cut}", prefix + stale[cut:]


def test_every_torn_form_of_the_last_batch_recovers_to_the_previous_batch(tmp_path, written):
    data, last_start = written
    checked = 0
    for name, content in tails(data, last_start):
        directory = tmp_path / "t-0"
        directory.mkdir()
        (directory / f"{0:020d}.log").write_bytes(content)
        log = Log.open(directory, LogConfig(), recovery_point=0)
        try:
            assert log.log_end_offset == BATCHES - 1, name
            assert log.active_segment.size == last_start, name
            assert_prefix_of_written_batches(log)
            assert log.append(batch_for(BATCHES - 1), 0).first_offset == BATCHES - 1, name
            assert_prefix_of_written_batches(log)
        finally:
            log.close()
        assert os.path.getsize(directory / f"{0:020d}.log") == len(data), name
        shutil.rmtree(directory)
        checked += 1
    assert checked >= 3 * (len(data) - last_start) - CRC_AT - 10


def test_the_untorn_file_keeps_every_batch(tmp_path, written):
    data, _ = written
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / f"{0:020d}.log").write_bytes(data)
    log = Log.open(directory, LogConfig(), recovery_point=0)
    assert log.log_end_offset == BATCHES
    assert_prefix_of_written_batches(log)
    log.close()

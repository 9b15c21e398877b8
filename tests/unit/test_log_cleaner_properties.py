"""Property test of compaction against a dict oracle: for any sequence of
keyed updates and tombstones, any batching, segment size and codec, a pass
keeps exactly the latest record of each key at its offset, and a pass after
the delete horizon also drops the tombstones."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kcore.log.config import LogConfig
from kcore.log.log import Log
from kcore.protocol.compression import CompressionType
from tests.support.cleaner import clean, keyed_batch, latest_of, read_batches, records_of

RETENTION_MS = 100


@settings(max_examples=150, deadline=None)
@given(updates=st.lists(st.tuples(st.integers(0, 15), st.booleans()), min_size=1, max_size=300),
       per_batch=st.integers(1, 20), segment_bytes=st.sampled_from([512, 1024, 4096]),
       codec=st.sampled_from([CompressionType.NONE, CompressionType.LZ4]))
def test_compaction_keeps_exactly_the_latest_record_of_every_key(updates, per_batch, segment_bytes,
                                                                 codec):
    with tempfile.TemporaryDirectory() as directory:
        config = LogConfig(segment_bytes=segment_bytes, cleanup_policy="compact",
                           file_delete_delay_ms=0, delete_retention_ms=RETENTION_MS)
        log = Log.open(Path(directory) / "p-0", config)
        try:
            oracle: dict[bytes, tuple[int, bytes | None]] = {}
            for start in range(0, len(updates), per_batch):
                pairs = [(b"k%d" % key, None if tombstone else b"v%d" % (start + i))
                         for i, (key, tombstone) in enumerate(updates[start:start + per_batch])]
                info = log.append(keyed_batch(pairs, codec=codec), 0)
                for delta, (key, value) in enumerate(pairs):
                    oracle[key] = (info.first_offset + delta, value)
            log.roll()
            clean(log, now_ms=1_000)
            assert latest_of(log) == oracle
            assert len(records_of(read_batches(log))) == len(oracle)
            clean(log, now_ms=1_000 + RETENTION_MS)
            assert latest_of(log) == {k: v for k, v in oracle.items() if v[1] is not None}
            assert log.log_end_offset == len(updates)
        finally:
            log.close()

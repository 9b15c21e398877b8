"""Helpers shared by the log cleaner tests: keyed batches, whole-log reads
checked for CRC and offset order, and the key -> latest value oracle."""
from __future__ import annotations

import os

from kcore.log.cleaner_task import CleaningTask, run_steps
from kcore.protocol.records import Record, RecordBatch, build_batch, iter_batches


def keyed_batch(pairs, timestamp: int = 1_000, **kwargs) -> bytearray:
    """One batch of (key, value) records; None is a null key or value."""
    return build_batch([Record(key=key, value=value, timestamp=timestamp) for key, value in pairs],
                       **kwargs)


def fill(log, batches: int, per_batch: int, keys: int, timestamp: int = 1_000,
         start: int = 0) -> dict[bytes, tuple[int, bytes]]:
    """Append ``batches`` batches of ``per_batch`` records cycling over
    ``keys`` keys, values naming their position; returns key -> (offset,
    value) of the latest record of each key."""
    latest: dict[bytes, tuple[int, bytes]] = {}
    sequence = start
    for _ in range(batches):
        pairs = []
        for _ in range(per_batch):
            pairs.append((b"key-%06d" % (sequence % keys), b"value-%09d" % sequence))
            sequence += 1
        info = log.append(keyed_batch(pairs, timestamp), 0)
        for delta, (key, value) in enumerate(pairs):
            latest[key] = (info.first_offset + delta, value)
    return latest


def read_batches(log, start: int | None = None) -> list[RecordBatch]:
    """Every batch from ``start`` (default the log start) to the log end
    through ``Log.read``; asserts each CRC and that offsets increase."""
    offset = log.log_start_offset if start is None else start
    batches: list[RecordBatch] = []
    while offset < log.log_end_offset:
        slices = log.read(offset, 1 << 20)
        if not slices:
            break
        data = b"".join(os.pread(s.fd, s.size, s.position) for s in slices)
        found = list(iter_batches(data))
        assert found, f"no whole batch read at offset {offset}"
        for batch in found:
            assert batch.is_valid(), f"bad CRC in batch at {batch.base_offset}"
            if batches:
                assert batch.base_offset > batches[-1].last_offset
            batches.append(batch)
        offset = found[-1].last_offset + 1
    return batches


def records_of(batches) -> list[Record]:
    records = [record for batch in batches if not batch.is_control for record in batch.records()]
    offsets = [record.offset for record in records]
    assert offsets == sorted(set(offsets)), "record offsets must strictly increase"
    return records


def latest_of(log) -> dict[bytes, tuple[int, bytes | None]]:
    """key -> (offset, value) of the last record of each key read back."""
    return {record.key: (record.offset, record.value) for record in records_of(read_batches(log))}


def clean(log, now_ms: int = 10_000, first_dirty: int | None = None, **kwargs):
    """One whole pass over everything below the active segment."""
    start = log.log_start_offset if first_dirty is None else first_dirty
    task = CleaningTask(log, start, log.active_segment.base_offset, now_ms, **kwargs)
    return run_steps(task.steps())

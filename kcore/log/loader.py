"""Opening a partition directory: cleanup, segment loading and recovery.

Kafka ``LogLoader``:

1. An interrupted compaction swap (``Log.replace_segments``) is finished:
   a ``<base>.log.swap`` exists only once the cleaned segment was complete
   and fsynced and the swap decided, so every segment whose base offset
   lies in [base, the swap's next offset) goes and the ``.swap`` files take
   their final names (an index without its ``.swap`` is rebuilt).
2. Leftovers of interrupted file operations go: ``*.deleted`` (removal was
   pending), ``*.cleaned`` (compaction output not yet swapped), ``*.swap``
   without a ``.log.swap``, ``*.tmp``, and index files whose ``.log`` is
   gone.
3. Every ``<base>.log`` is opened. Segments before the active one that
   need no recovery are lazy (segment.py): their indexes are opened,
   sanity-checked and if need be rebuilt on first use. The active segment
   after a clean shutdown gets its state from the indexes plus a header
   walk of the tail; an index that is missing or fails its sanity check is
   rebuilt from the data.
4. After an unclean stop, every segment from the one holding the recovery
   point onwards is recovered (``LogSegment.recover``): batches past the
   last trusted index entry below the recovery point are checked (size,
   CRC-32C, offsets) and their index entries rebuilt. The first torn or
   corrupt batch ends the log: its segment is truncated there and every
   later segment deleted. An empty partition costs one directory listing
   and three opens.
5. ``Log.open`` then makes the leader epoch cache agree with the log,
   learning the epochs of the recovered batches (``learn_leader_epochs``).

Runs once per partition at startup, before the Log serves anything; the
log manager runs it for many partitions at once on
``num.recovery.threads.per.data.dir`` threads (the scans release the GIL).
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import NamedTuple

from kcore._native import records as native_records
from kcore._native import segment as native_segment
from kcore.log.checkpoints import fsync_dir
from kcore.log.config import LogConfig
from kcore.log.leader_epoch import LeaderEpochCache
from kcore.log.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_name,
)

log = logging.getLogger(__name__)

_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")
_LEFTOVER_SUFFIXES = (DELETED_SUFFIX, ".cleaned", ".swap", ".tmp")
_SWAP_FILE = re.compile(r"^(\d{20})\.log\.swap$")
_SNAPSHOT_FILE = re.compile(r"^\d{20}\.snapshot$")
_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, ".txnindex")
# Batch headers read per native call while learning epochs: 4096 headers
# (61 bytes each, under 1 MiB as Python objects) bound the memory of a round
# however small the batches are.
_HEADERS_PER_READ = 4096


class LoadedSegments(NamedTuple):
    """Every segment, oldest first, those recovery re-checked with the
    position each check started at, and the offsets of the producer state
    snapshots in the directory (the one listing a start makes of it)."""

    segments: list[LogSegment]
    recovered: list[tuple[LogSegment, int]]
    snapshot_offsets: list[int]


def complete_swaps(directory: Path) -> int:
    """Finish every compaction swap a crash interrupted (step 1 of the
    module docstring); returns how many there were."""
    swaps = sorted(int(m.group(1)) for m in map(_SWAP_FILE.match, os.listdir(directory)) if m)
    for base in swaps:
        stem = directory / f"{base:020d}"
        swap = Path(f"{stem}{LOG_SUFFIX}.swap")
        next_offset = _next_offset(swap, base)
        replaced = [b for b in _segment_bases(directory) if base <= b < max(next_offset, base + 1)]
        log.warning("%s: finishing an interrupted compaction swap over segments %s", swap, replaced)
        _delete_later(directory, replaced)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            index_swap = Path(f"{stem}{suffix}.swap")
            if index_swap.exists():
                os.replace(index_swap, f"{stem}{suffix}")
        os.replace(swap, f"{stem}{LOG_SUFFIX}")
    if swaps:
        fsync_dir(directory)
    return len(swaps)


def _next_offset(path: Path, base: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        _, batches, next_offset, _, _ = native_segment.walk_headers(fd, 0, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return next_offset if batches else base


def _segment_bases(directory: Path) -> list[int]:
    return sorted(int(name[:20]) for name in os.listdir(directory)
                  if (match := _SEGMENT_FILE.match(name)) and match.group(2) == LOG_SUFFIX)


def remove_leftovers(directory: Path, names: set[str]) -> list[int]:
    """Delete interrupted-operation files among ``names`` (the directory's
    listing, updated); return the base offsets of the ``.log`` files,
    sorted."""
    bases = set()
    for name in list(names):
        if name.endswith(_LEFTOVER_SUFFIXES):
            _unlink(directory, name, names)
            continue
        match = _SEGMENT_FILE.match(name)
        if match is None:
            continue
        if match.group(2) == LOG_SUFFIX:
            bases.add(int(match.group(1)))
        elif match.group(1) + LOG_SUFFIX not in names:
            _unlink(directory, name, names)
    return sorted(bases)


def _unlink(directory: Path, name: str, names: set[str]) -> None:
    try:
        os.unlink(os.path.join(directory, name))
    except FileNotFoundError:
        pass
    names.discard(name)


def load_segments(directory: Path, config: LogConfig, recovery_point: int,
                  clean_shutdown: bool) -> LoadedSegments:
    """Open (and where needed recover) every segment, oldest first."""
    names = set(os.listdir(directory))
    if any(_SWAP_FILE.match(name) for name in names) and complete_swaps(directory):
        names = set(os.listdir(directory))
    bases = remove_leftovers(directory, names)
    snapshot_offsets = [int(name[:20]) for name in names if _SNAPSHOT_FILE.match(name)]
    segments: list[LogSegment] = []
    recovered: list[tuple[LogSegment, int]] = []
    try:
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            unflushed = not clean_shutdown and (next_base is None or next_base > recovery_point)
            stem = segment_name(base)
            segment = LogSegment.open(directory, base, config,
                                      lazy=next_base is not None and not unflushed,
                                      indexes_present=stem + INDEX_SUFFIX in names
                                      and stem + TIME_INDEX_SUFFIX in names)
            segments.append(segment)
            if unflushed or (next_base is None and segment.needs_rebuild()):
                start = recovery_point if unflushed else base
                # Kafka's "Recovering unflushed segment": a clean stop
                # leaves nothing to scan, so this line says the last one was not.
                log.info("%s: recovering segment %d from offset %d (%s)", directory, base, start,
                         "unflushed" if unflushed else "its index is rebuilt")
                removed, reason, position = segment.recover(start)
                recovered.append((segment, position))
                if removed:
                    log.warning("%s: recovery cut %d bytes at position %d (%s); deleting %d later "
                                "segment(s)", segment.log_path, removed, segment.size, reason,
                                len(bases) - i - 1)
                    _delete_later(directory, bases[i + 1:])
                    break
                if next_base is not None:
                    segment.trim()
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    return LoadedSegments(segments, recovered, snapshot_offsets)


def learn_leader_epochs(segment: LogSegment, cache: LeaderEpochCache, position: int = 0) -> None:
    """Assign the epoch of each batch of ``segment`` from ``position`` on
    that is newer than the cache's latest, at the batch's base offset
    (Kafka ``LogSegment.recover``). The cache file is flushed before the
    recovery point moves, so the epochs of batches before where recovery
    started are in it. Truncation does not fsync the segment, so a crash
    can bring back batches whose epochs the cache file had already
    dropped; a lost or malformed cache file is partly rebuilt the same way."""
    while position < segment.size:
        headers, position = native_segment.batch_headers(segment.fd, position, segment.size,
                                                         _HEADERS_PER_READ)
        if not headers:
            break
        for _, raw in headers:
            header = native_records.parse_batch_header(raw)
            if header.partition_leader_epoch > cache.latest_epoch:
                cache.assign(header.partition_leader_epoch, header.base_offset)


def _delete_later(directory: Path, bases: list[int]) -> None:
    for base in bases:
        for suffix in (LOG_SUFFIX, *_INDEX_SUFFIXES):
            (directory / f"{base:020d}{suffix}").unlink(missing_ok=True)

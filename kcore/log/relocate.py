"""Moving partition directories between log dirs while no broker runs:
a node that changes ``num.processes`` gives each process's partitions to
the process that serves them now (each process has its own log dirs,
``<log dir>/process-<i>``).

A partition directory moves by rename (same file system: log dirs of one
node are usually on one disk; another gets a sentence), and its entries in
the source dir's checkpoint files (recovery point, log start offset, high
watermark) move with it, so nothing is recovered or re-exposed that was
not. Only a dir whose last stop was clean (``.kafka_cleanshutdown``) gives
partitions away: after a crash its group-commit journal may still hold
acknowledged batches its own broker must replay first. A target dir that
held no partition yet is marked clean too (the partitions it receives were
stopped cleanly); one with partitions of its own keeps its own state.

Not thread-safe; runs before any broker opens these dirs (their ``.lock``
files are taken while it runs).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from kcore.log.checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    fsync_dir,
)
from kcore.log.errors import KafkaStorageError
from kcore.metadata import TopicPartition

PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
               REPLICATION_OFFSET_CHECKPOINT)
LOCK_FILE = ".lock"



def find_partitions(directories: list[Path]) -> dict[TopicPartition, Path]:
    """Partition -> the log dir holding it, over ``directories``."""
    found: dict[TopicPartition, Path] = {}
    for directory in directories:
        if not directory.is_dir():
            continue
        for child in directory.iterdir():
            match = PARTITION_DIR.match(child.name)
            if child.is_dir() and match and not child.name.endswith("-delete"):
                key = (match["topic"], int(match["partition"]))
                if key in found:
                    raise KafkaStorageError(f"{key[0]}-{key[1]} is in two log dirs: "
                                            f"{found[key]} and {directory}")
                found[key] = directory
    return found


def relocate(wanted: Mapping[TopicPartition, Path], directories: list[Path]) -> int:
    """Move each partition found in ``directories`` to ``wanted[p]`` where
    that differs; returns how many moved. Raises KafkaStorageError, moving
    nothing, when a source did not stop cleanly."""
    found = find_partitions(directories)
    moves = [(key, source, wanted[key]) for key, source in found.items()
             if key in wanted and wanted[key] != source]
    if not moves:
        return 0
    involved = sorted({m[1] for m in moves} | {m[2] for m in moves})
    with _locked(involved):
        for source in {m[1] for m in moves}:
            if not (source / CLEAN_SHUTDOWN_FILE).exists():
                raise KafkaStorageError(
                    f"{source} did not stop cleanly: start the node once with the number of "
                    "processes it had, then change num.processes")
        fresh = {t for t in {m[2] for m in moves} if not any(
            found[k] == t for k in found)}
        for target in {m[2] for m in moves}:
            target.mkdir(parents=True, exist_ok=True)
        _move_checkpoints(moves)
        for (topic, partition), source, target in moves:
            name = f"{topic}-{partition}"
            try:
                os.rename(source / name, target / name)
            except OSError as exc:
                raise KafkaStorageError(f"cannot move {source / name} to {target}: "
                                        f"{exc.strerror}") from exc
        for directory in involved:
            fsync_dir(directory)
        for target in fresh:
            (target / CLEAN_SHUTDOWN_FILE).touch()
    return len(moves)


def _move_checkpoints(moves: list[tuple[TopicPartition, Path, Path]]) -> None:
    for name in CHECKPOINTS:
        files = {d: OffsetCheckpointFile(d / name) for m in moves for d in (m[1], m[2])}
        contents = {d: _read_quietly(f) for d, f in files.items()}
        for key, source, target in moves:
            if key in contents[source]:
                contents[target][key] = contents[source].pop(key)
        for directory, offsets in contents.items():
            files[directory].write(offsets)


def _read_quietly(checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
    try:
        return checkpoint.read()
    except KafkaStorageError:
        return {}  # unreadable: the partitions are recovered from their logs instead


@contextlib.contextmanager
def _locked(directories: list[Path]) -> Iterator[None]:
    fds = []
    try:
        for directory in directories:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise KafkaStorageError(f"{directory} is in use by a running broker") from None
        yield
    finally:
        for fd in fds:
            os.close(fd)

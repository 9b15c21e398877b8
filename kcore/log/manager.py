"""LogManager: every partition log under ``log.dirs``.

Per log dir (Kafka's layout)::

    .lock                               flock'ed while a broker owns the dir
    .kafka_cleanshutdown                present only after a clean shutdown
    recovery-point-offset-checkpoint    topic partition offset (checkpoints.py)
    log-start-offset-checkpoint
    <topic>-<partition>/                one Log each (log.py)
    <topic>-<partition>.<id>-stray/     a log of a deleted topic, set aside

At start every partition directory is opened: after a clean shutdown its
state is trusted (indexes are still sanity-checked); otherwise each log is
recovered from its checkpointed recovery point. Logs open on
``num.recovery.threads.per.data.dir`` threads per log dir (Kafka's name
and default, 1): the recovery scans release the GIL, so threads pay when
there is unflushed data to check. The clean-shutdown marker is removed
once loading is done, so a crash from then on is seen as one. A
truncation that moves a log's recovery point back rewrites its dir's
recovery-point checkpoint at once (recovery trusts what lies below it),
and so does a move of a log's start offset with the log-start-offset
checkpoint (a restart must keep what DeleteRecords removed removed).
Background duties are methods the broker calls on its timers:
``cleanup_logs`` (log.retention.check.interval.ms) and ``flush_dirty_logs``
(log.flush.scheduler.interval.ms); ``shutdown`` flushes, checkpoints and
leaves the marker. Source: Kafka ``LogManager``.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from kcore.clock import monotonic_ms
from kcore.log.checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    StagedRenames,
    fsync_dir,
    sync_filesystem,
)
from kcore.log.config import LogConfig
from kcore.log.errors import KafkaStorageError
from kcore.log.journal import replay as replay_journal
from kcore.log.log import Log
from kcore.metadata import TopicPartition

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
_PARTITION_DIR = re.compile(r"^.+-\d+$")
_DELETED_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
# Distinct topic configs kept parsed (_config_of); a broker has a few.
_CONFIGS_CACHED = 1024



class _LogToOpen(NamedTuple):
    """A partition directory found at start and what its log dir's
    checkpoints say about it."""

    directory: Path
    path: Path
    recovery_point: int
    log_start_offset: int
    clean_shutdown: bool


class LogManager:
    def __init__(self, log_dirs: Sequence[Path | str],
                 defaults: Mapping[str, Any] | LogConfig | None = None, *,
                 retention_check_interval_ms: int = 300_000,
                 high_watermark_of: Callable[[str, int], int | None] | None = None,
                 recovery_threads_per_data_dir: int = 1):
        """``defaults``: topic configs (Kafka keys) every log starts from.
        ``high_watermark_of(topic, partition)``, when given, bounds what
        retention may delete (Kafka never deletes past the high watermark)."""
        self.log_dirs = [Path(d) for d in log_dirs]
        if not self.log_dirs:
            raise ValueError("log.dirs is empty")
        self.defaults = defaults
        self.default_config = LogConfig.from_topic_configs(None, defaults)
        self.retention_check_interval_ms = retention_check_interval_ms
        self.high_watermark_of = high_watermark_of
        self.recovery_threads_per_data_dir = recovery_threads_per_data_dir
        self.logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._logs_in: Counter[Path] = Counter()
        self._configs: dict[tuple, LogConfig] = {}
        # Checkpoint file name -> the log dirs whose file is to be rewritten.
        self._stale_checkpoints: dict[str, set[Path]] = {}
        self._locks: list[int] = []
        # Called with a Log before it is closed and removed (the group-commit
        # syncer drops its journal entries).
        self.before_delete: list[Callable[[Log], None]] = []
        try:
            for directory in self.log_dirs:
                self._lock(directory)
            self._load_logs([item for directory in self.log_dirs
                             for item in self._logs_in_dir(directory)])
            for directory in self.log_dirs:
                self._remove_clean_shutdown_marker(directory)
            self._replay_journals()
        except BaseException:
            self._close_all()
            raise

    # -- loading ----------------------------------------------------------------------------
    def _lock(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise KafkaStorageError(f"{directory} is locked by another process") from None
        self._locks.append(fd)

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except KafkaStorageError as exc:
            log.warning("ignoring %s: %s", path, exc)
            return {}

    def _logs_in_dir(self, directory: Path) -> list[_LogToOpen]:
        clean = (directory / CLEAN_SHUTDOWN_FILE).exists()
        recovery_points = self._read_checkpoint(directory / RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT)
        found = []
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            if entry.name.endswith(_DELETED_DIR_SUFFIX):
                _remove_tree(path)
            elif entry.name.endswith(STRAY_DIR_SUFFIX):
                log.warning("%s: a stray log of a deleted topic, not served; remove it when "
                            "it is not needed", path)
            elif _PARTITION_DIR.match(entry.name):
                key = _key_of(path)
                found.append(_LogToOpen(directory, path, recovery_points.get(key, 0),
                                        start_offsets.get(key, 0), clean))
        return found

    def _load_logs(self, found: list[_LogToOpen]) -> None:
        """Open every log, on the recovery threads when there are several;
        all of them are registered, or none (those opened are closed)."""
        threads = self.recovery_threads_per_data_dir * len(self.log_dirs)
        if threads <= 1 or len(found) <= 1:
            opened = [self._try_open(item) for item in found]
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
                opened = list(pool.map(self._try_open, found))
        failure = next((item for item in opened if isinstance(item, BaseException)), None)
        try:
            if failure is not None:
                raise failure
            for item, log_ in zip(found, opened):
                assert isinstance(log_, Log)
                self._register(log_, item.directory)
        except BaseException:
            for log_ in opened:
                if isinstance(log_, Log) and self.logs.get((log_.topic, log_.partition)) is not log_:
                    log_.close()
            raise

    def _try_open(self, item: _LogToOpen) -> Log | BaseException:
        try:
            return Log.open(item.path, self.default_config, recovery_point=item.recovery_point,
                            log_start_offset=item.log_start_offset,
                            clean_shutdown=item.clean_shutdown, create=False)
        except BaseException as exc:  # reported once every log was tried
            return exc

    def _register(self, log_: Log, directory: Path) -> None:
        key = (log_.topic, log_.partition)
        if key in self.logs:
            raise KafkaStorageError(f"{key[0]}-{key[1]} is in two log dirs: "
                                    f"{self._dir_of[key]} and {directory}")
        self.logs[key] = log_
        self._dir_of[key] = directory
        self._logs_in[directory] += 1
        log_.recovery_point_lowered = self._checkpoint_recovery_point_of
        log_.log_start_offset_moved = self._checkpoint_log_start_offset_of

    def _remove_clean_shutdown_marker(self, directory: Path) -> None:
        marker = directory / CLEAN_SHUTDOWN_FILE
        if marker.exists():
            marker.unlink()
            fsync_dir(directory)

    def _replay_journals(self) -> None:
        """Batches the group-commit journal made durable that a crash took
        from the segment files go back into their logs (journal.py)."""
        by_name = {log_.dir.name: log_ for log_ in self.logs.values()}
        for directory in self.log_dirs:
            replay_journal(directory, by_name)

    # -- partitions -------------------------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int,
                          configs: Mapping[str, Any] | None = None) -> Log:
        """The partition's log, created (in the log dir holding the fewest
        partitions) when it does not exist. ``configs`` (Kafka topic keys)
        become its config over the defaults."""
        key = (topic, partition)
        config = self._config_of(configs)
        existing = self.logs.get(key)
        if existing is not None:
            if configs:
                existing.update_config(config)
            return existing
        directory = min(self.log_dirs, key=lambda d: self._logs_in[d])
        created = Log.open(directory / f"{topic}-{partition}", config)
        self._register(created, directory)
        return created

    def _config_of(self, configs: Mapping[str, Any] | None) -> LogConfig:
        """The LogConfig of topic ``configs`` over the defaults, parsed once
        per distinct configs: every partition of a topic has the same, and
        parsing them for each of 10,000 partitions took 0.5 s of a start."""
        if not configs:
            return self.default_config
        key = tuple(sorted(configs.items()))
        config = self._configs.get(key)
        if config is None:
            if len(self._configs) >= _CONFIGS_CACHED:
                self._configs.clear()
            config = self._configs[key] = LogConfig.from_topic_configs(configs, self.defaults)
        return config

    def update_defaults(self, defaults: Mapping[str, Any]) -> None:
        """New topic defaults (a dynamic broker config changed); each
        partition's own config follows through ``update_config``."""
        self.defaults = defaults
        self.default_config = LogConfig.from_topic_configs(None, defaults)
        self._configs.clear()

    def update_config(self, topic: str, partition: int, configs: Mapping[str, Any]) -> None:
        existing = self.logs.get((topic, partition))
        if existing is not None:
            existing.update_config(self._config_of(configs))

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close and remove a partition's log (renamed ``*-delete`` first, so
        a crash mid-way finishes the removal at the next start)."""
        doomed = self._close_and_rename(topic, partition, _DELETED_DIR_SUFFIX)
        if doomed is None:
            return False
        _remove_tree(doomed)
        return True

    def set_aside_stray(self, topic: str, partition: int) -> Path | None:
        """Close a partition's log that belongs to a deleted topic (a stray)
        and rename its directory ``<topic>-<partition>.<unique id>-stray``,
        out of the name's way: kept for an operator to look at and remove,
        as Kafka keeps its stray logs. Returns the new path."""
        return self._close_and_rename(topic, partition, STRAY_DIR_SUFFIX)

    def _close_and_rename(self, topic: str, partition: int, suffix: str) -> Path | None:
        key = (topic, partition)
        existing = self.logs.pop(key, None)
        if existing is None:
            return None
        for hook in self.before_delete:
            hook(existing)
        directory = self._dir_of.pop(key)
        self._logs_in[directory] -= 1
        existing.close()
        renamed = directory / f"{topic}-{partition}.{uuid.uuid4().hex}{suffix}"
        os.replace(existing.dir, renamed)
        fsync_dir(directory)
        return renamed

    def all_logs(self) -> Iterator[Log]:
        return iter(list(self.logs.values()))

    # -- background duties ------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """One retention pass over every log, removal of ``.deleted`` files
        whose delay passed, and the log-start-offset checkpoint. Returns
        the number of segments deleted."""
        deleted = 0
        for (topic, partition), item in list(self.logs.items()):
            high_watermark = self.high_watermark_of(topic, partition) if self.high_watermark_of else None
            deleted += item.delete_old_segments(high_watermark)
            item.delete_expired_files()
        self.checkpoint_log_start_offsets()
        return deleted

    def flush_dirty_logs(self) -> None:
        """fsync what flush.ms says is due, and every rolled segment not yet
        flushed (keeps recovery to the active segment), then checkpoint the
        recovery points."""
        for item in self.all_logs():
            if monotonic_ms(item.clock) - item.last_flush_ms >= item.config.flush_ms:
                item.flush()
            elif item.recovery_point < item.active_segment.base_offset:
                item.flush(item.active_segment.base_offset)
        self.checkpoint_recovery_points()

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint(RECOVERY_POINT_CHECKPOINT, lambda item: item.recovery_point)

    def _checkpoint_recovery_point_of(self, log_: Log) -> None:
        """A truncation lowered ``log_``'s recovery point: its dir's
        checkpoint is rewritten before anything is appended past the cut
        (``_checkpoint_soon``)."""
        self._checkpoint_soon(RECOVERY_POINT_CHECKPOINT, log_)

    def _checkpoint_log_start_offset_of(self, log_: Log) -> None:
        """``log_``'s start offset moved: its dir's checkpoint is rewritten
        (``_checkpoint_soon``). Kafka writes it only every
        log.flush.start.offset.checkpoint.interval.ms (60 s), so a crash
        in between brings records a DeleteRecords removed back; one small
        file per log dir and loop turn costs less than that surprise."""
        self._checkpoint_soon(LOG_START_OFFSET_CHECKPOINT, log_)

    def _checkpoint_soon(self, name: str, log_: Log) -> None:
        """Rewrite checkpoint ``name`` of ``log_``'s dir. On an event loop
        that is once, after the current callback: a follower truncating
        thousands of partitions from one OffsetForLeaderEpoch answer (or
        taking their leaders' start offsets from one fetch) writes the file
        once, not per partition; nothing appends before the loop's next turn."""
        directory = self._dir_of.get((log_.topic, log_.partition))
        if directory is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write_stale_checkpoints({name: {directory}})
            return
        if not self._stale_checkpoints:
            loop.call_soon(self._write_stale_checkpoints, None)
        self._stale_checkpoints.setdefault(name, set()).add(directory)

    def _write_stale_checkpoints(self, stale: dict[str, set[Path]] | None) -> None:
        if stale is None:
            stale, self._stale_checkpoints = self._stale_checkpoints, {}
        if not self.logs:  # shut down meanwhile
            return
        values: dict[str, Callable[[Log], int]] = {
            RECOVERY_POINT_CHECKPOINT: lambda item: item.recovery_point,
            LOG_START_OFFSET_CHECKPOINT: lambda item: item.log_start_offset}
        for name, directories in stale.items():
            self._checkpoint(name, values[name], sorted(directories))

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda item: item.log_start_offset)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """``replication-offset-checkpoint`` of each log dir: the high
        watermark of each partition it holds (the replication layer owns the
        values; a restarted replica starts from them)."""
        for directory in self.log_dirs:
            offsets = {key: value for key, value in high_watermarks.items()
                       if self._dir_of.get(key) == directory}
            OffsetCheckpointFile(directory / REPLICATION_OFFSET_CHECKPOINT).write(offsets)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        found: dict[TopicPartition, int] = {}
        for directory in self.log_dirs:
            found.update(self._read_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT))
        return found

    def _checkpoint(self, name: str, value: Callable[[Log], int],
                    directories: Sequence[Path] | None = None) -> None:
        for directory in directories or self.log_dirs:
            offsets = {key: value(item) for key, item in self.logs.items()
                       if self._dir_of[key] == directory}
            OffsetCheckpointFile(directory / name).write(offsets)

    # -- shutdown ---------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Clean shutdown: write and close every log (leader epoch files
        staged), sync each log dir's filesystem once (not ~4 fsyncs per
        partition), rename the staged files and sync again, then write both
        checkpoints and leave ``.kafka_cleanshutdown`` in each dir."""
        staged = StagedRenames()
        for item in self.all_logs():
            item.flush(sync=False, staged=staged)
            item.close(sync=False, staged=staged)
        self._sync_filesystems()
        staged.commit()
        self._sync_filesystems()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for directory in self.log_dirs:
            (directory / CLEAN_SHUTDOWN_FILE).touch()
            fsync_dir(directory)
        self.logs.clear()
        self._dir_of.clear()
        self._logs_in.clear()
        self._release_locks()

    def _sync_filesystems(self) -> None:
        """syncfs once per filesystem holding a log dir."""
        devices = set()
        for directory in self.log_dirs:
            device = directory.stat().st_dev
            if device not in devices:
                devices.add(device)
                sync_filesystem(directory)

    def _close_all(self) -> None:
        for item in self.logs.values():
            item.close()
        self.logs.clear()
        self._release_locks()

    def _release_locks(self) -> None:
        for fd in self._locks:
            os.close(fd)
        self._locks = []


def _key_of(path: Path) -> TopicPartition:
    topic, _, partition = path.name.rpartition("-")
    return topic, int(partition)


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), reverse=True):
        if child.is_dir():
            child.rmdir()
        else:
            child.unlink()
    path.rmdir()

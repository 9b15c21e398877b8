"""LogManager: every partition log under ``log.dirs``.

Per log dir (Kafka's layout)::

    .lock                               flock'ed while a broker owns the dir
    .kafka_cleanshutdown                present only after a clean shutdown
    recovery-point-offset-checkpoint    topic partition offset (checkpoints.py)
    log-start-offset-checkpoint
    <topic>-<partition>/                one Log each (log.py)
    <topic>-<partition>.<id>-future/    a replica moving into this dir
    <topic>-<partition>.<id>-delete/    a log being removed
    <topic>-<partition>.<id>-stray/     a log of a deleted topic, set aside

A new partition goes to the online dir holding the fewest logs (current
and future ones; the first such dir in ``log.dirs`` order), or to the dir
AlterReplicaLogDirs asked for it beforehand (Kafka's nextLogDirs and
preferred log dirs); a dir where the log cannot be made is reported and
the next one tried.

Moving a replica to another dir of this broker (AlterReplicaLogDirs): a
future log is made in the destination, starting where the current log
starts; the replication layer copies the current log into it while the
partition serves (replication/log_dir_mover.py) and, once both end at the
same offset, ``replace_current_with_future_log`` swaps them: the current
log is renamed ``-delete`` (its files stay open for fetches in flight for
``file.delete.delay.ms``, then go), the future one takes its name. A crash
between the two renames leaves a future log without a current one but
with its ``-delete`` twin: the next start finishes the swap. Any other
future log without a current one is removed.

A dir that fails (log_dirs.py) goes offline alone: its logs leave the
manager (their files are closed, nothing more is written there) and its
checkpoints are no longer written; the other dirs go on.

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
import shutil
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
from kcore.log.log import FUTURE_DIR_SUFFIX, Log, now_ms
from kcore.log.log_dirs import LogDirs
from kcore.log.producer_state import SNAPSHOT_SUFFIX
from kcore.log.writeback import WriteBehind
from kcore.metadata import TopicPartition

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
_PARTITION_DIR = re.compile(r"^.+-\d+$")
# <topic>-<partition>.<32 hex digits>-future or -delete (Kafka's logFutureDirName).
_RENAMED_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)\.[0-9a-f]{32}-(?P<suffix>future|delete)$")
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
    is_future: bool = False


class _Found(NamedTuple):
    """What a start finds in the online log dirs."""

    logs: list[_LogToOpen]
    deleted: dict[TopicPartition, list[Path]]


class LogManager:
    def __init__(self, log_dirs: Sequence[Path | str],
                 defaults: Mapping[str, Any] | LogConfig | None = None, *,
                 retention_check_interval_ms: int = 300_000,
                 high_watermark_of: Callable[[str, int], int | None] | None = None,
                 recovery_threads_per_data_dir: int = 1,
                 writeback_interval_bytes: int = 0):
        """``defaults``: topic configs (Kafka keys) every log starts from.
        ``high_watermark_of(topic, partition)``, when given, bounds what
        retention may delete (Kafka never deletes past the high watermark).
        ``writeback_interval_bytes`` > 0: each log's appends are written
        back in steps of that size (writeback.py); 0 leaves it to the kernel."""
        self.dirs = LogDirs(log_dirs)
        self.dirs.on_failure = self.handle_log_dir_failure  # the replica manager's, once it runs
        self.log_dirs = self.dirs.paths
        self.defaults = defaults
        self.default_config = LogConfig.from_topic_configs(None, defaults)
        self.retention_check_interval_ms = retention_check_interval_ms
        self.high_watermark_of = high_watermark_of
        self.recovery_threads_per_data_dir = recovery_threads_per_data_dir
        self.write_behind = WriteBehind(writeback_interval_bytes) if writeback_interval_bytes > 0 else None
        self.logs: dict[TopicPartition, Log] = {}
        self.future_logs: dict[TopicPartition, Log] = {}
        # Where AlterReplicaLogDirs wants a partition this broker has no log of yet.
        self.preferred_dirs: dict[TopicPartition, Path] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._logs_in: Counter[Path] = Counter()
        self._configs: dict[tuple, LogConfig] = {}
        # Checkpoint file name -> the log dirs whose file is to be rewritten.
        self._stale_checkpoints: dict[str, set[Path]] = {}
        self._locks: list[int] = []
        # Logs replaced by their future logs: (deadline ms, log, renamed dir).
        self._doomed: list[tuple[int, Log, Path]] = []
        # Called with a Log before it is closed and removed (the group-commit
        # syncer drops its journal entries).
        self.before_delete: list[Callable[[Log], None]] = []
        try:
            for directory in self.log_dirs:
                self._lock(directory)
            found = self._find_logs()
            self._load_logs(found.logs)
            for paths in found.deleted.values():
                for path in paths:
                    _remove_tree(path)
            for directory in self.dirs.online:
                self._remove_clean_shutdown_marker(directory)
            self._replay_journals()
        except BaseException:
            self._close_all()
            raise

    # -- loading ----------------------------------------------------------------------------
    def _lock(self, directory: Path) -> None:
        """Lock the dir; one that cannot be made or opened goes offline,
        unless it is the first (it holds the broker's own files)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if directory == self.log_dirs[0]:
                raise KafkaStorageError(f"cannot use log dir {directory}: {exc.strerror}") from None
            self.dirs.mark_offline(directory, f"cannot open it at start: {exc.strerror}")
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise KafkaStorageError(f"{directory} is locked by another process") from None
        self._locks.append(fd)
        self.dirs.remember(directory)

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except KafkaStorageError as exc:
            log.warning("ignoring %s: %s", path, exc)
            return {}

    def _find_logs(self) -> _Found:
        logs: list[_LogToOpen] = []
        deleted: dict[TopicPartition, list[Path]] = {}
        for directory in self.dirs.online:
            self._logs_in_dir(directory, logs, deleted)
        return _Found(self._finish_swaps(logs, deleted), deleted)

    def _logs_in_dir(self, directory: Path, found: list[_LogToOpen],
                     deleted: dict[TopicPartition, list[Path]]) -> None:
        clean = (directory / CLEAN_SHUTDOWN_FILE).exists()
        recovery_points = self._read_checkpoint(directory / RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT)
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            renamed = _RENAMED_DIR.match(entry.name)
            if renamed is not None and renamed["suffix"] == "future":
                key = (renamed["topic"], int(renamed["partition"]))
                found.append(_LogToOpen(directory, path, recovery_points.get(key, 0),
                                        start_offsets.get(key, 0), clean, True))
            elif entry.name.endswith(_DELETED_DIR_SUFFIX):
                key = (renamed["topic"], int(renamed["partition"])) if renamed else ("", -1)
                deleted.setdefault(key, []).append(path)
            elif entry.name.endswith(STRAY_DIR_SUFFIX):
                log.warning("%s: a stray log of a deleted topic, not served; remove it when "
                            "it is not needed", path)
            elif _PARTITION_DIR.match(entry.name):
                key = _key_of(path)
                found.append(_LogToOpen(directory, path, recovery_points.get(key, 0),
                                        start_offsets.get(key, 0), clean))

    def _finish_swaps(self, found: list[_LogToOpen],
                      deleted: Mapping[TopicPartition, list[Path]]) -> list[_LogToOpen]:
        """A future log with no current log: a swap a crash cut between
        its renames (the current one went ``-delete`` already) completes;
        any other is an unfinished copy of a log that is gone, removed."""
        current = {_key_of(item.path) for item in found if not item.is_future}
        kept = []
        for item in found:
            key = _key_of(item.path)
            if not item.is_future or key in current:
                kept.append(item)
            elif key in deleted:
                target = item.directory / f"{key[0]}-{key[1]}"
                log.info("finishing the move of %s-%d into %s", key[0], key[1], item.directory)
                os.replace(item.path, target)
                fsync_dir(item.directory)
                current.add(key)
                kept.append(item._replace(path=target, is_future=False))
            else:
                log.warning("removing %s: the log it was copied from is gone", item.path)
                _remove_tree(item.path)
        return kept

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
                self._register(log_, item.directory, item.is_future)
        except BaseException:
            for log_ in opened:
                if isinstance(log_, Log) and log_ not in self._registered_logs():
                    log_.close()
            raise

    def _try_open(self, item: _LogToOpen) -> Log | BaseException:
        try:
            return Log.open(item.path, self.default_config, recovery_point=item.recovery_point,
                            log_start_offset=item.log_start_offset,
                            clean_shutdown=item.clean_shutdown, create=False)
        except BaseException as exc:  # reported once every log was tried
            return exc

    def _register(self, log_: Log, directory: Path, is_future: bool = False) -> None:
        key = (log_.topic, log_.partition)
        log_.write_behind = self.write_behind
        if is_future:
            if key in self.future_logs:
                raise KafkaStorageError(f"{key[0]}-{key[1]} has two future logs: "
                                        f"{self.future_logs[key].dir} and {log_.dir}")
            self.future_logs[key] = log_
        else:
            if key in self.logs:
                raise KafkaStorageError(f"{key[0]}-{key[1]} is in two log dirs: "
                                        f"{self._dir_of[key]} and {directory}")
            self.logs[key] = log_
            self._dir_of[key] = directory
            log_.recovery_point_lowered = self._checkpoint_recovery_point_of
            log_.log_start_offset_moved = self._checkpoint_log_start_offset_of
        self._logs_in[directory] += 1

    def _registered_logs(self) -> list[Log]:
        return [*self.logs.values(), *self.future_logs.values()]

    def _remove_clean_shutdown_marker(self, directory: Path) -> None:
        marker = directory / CLEAN_SHUTDOWN_FILE
        if marker.exists():
            marker.unlink()
            fsync_dir(directory)

    def _replay_journals(self) -> None:
        """Batches the group-commit journal made durable that a crash took
        from the segment files go back into their logs (journal.py)."""
        by_name = {log_.dir.name: log_ for log_ in self.logs.values()}
        for directory in self.dirs.online:
            replay_journal(directory, by_name)

    # -- partitions -------------------------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_future_log(self, topic: str, partition: int) -> Log | None:
        return self.future_logs.get((topic, partition))

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        """The log dir holding the partition's current log."""
        return self._dir_of.get((topic, partition))

    def next_log_dirs(self) -> list[Path]:
        """Online dirs, fewest logs (current and future) first: Kafka's nextLogDirs."""
        return sorted(self.dirs.online, key=lambda directory: self._logs_in[directory])

    def get_or_create_log(self, topic: str, partition: int,
                          configs: Mapping[str, Any] | None = None) -> Log:
        """The partition's log, created (in its preferred dir, else the
        online dir holding the fewest logs) when it does not exist.
        ``configs`` (Kafka topic keys) become its config over the defaults."""
        key = (topic, partition)
        config = self._config_of(configs)
        existing = self.logs.get(key)
        if existing is not None:
            if configs:
                existing.update_config(config)
            return existing
        preferred = self.preferred_dirs.get(key)
        directories = [preferred] if preferred is not None else self.next_log_dirs()
        failure: BaseException | None = None
        for directory in directories:
            if not self.dirs.is_online(directory):
                continue
            try:
                created = Log.open(directory / f"{topic}-{partition}", config)
            except (KafkaStorageError, OSError) as exc:
                self._storage_failure(directory, exc)
                failure = exc
                continue
            self._register(created, directory)
            self.preferred_dirs.pop(key, None)
            return created
        raise KafkaStorageError(f"no log dir could hold {topic}-{partition} (tried "
                                f"{', '.join(str(d) for d in directories)}): {failure}")

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
        config = self._config_of(configs)
        for registry in (self.logs, self.future_logs):
            existing = registry.get((topic, partition))
            if existing is not None:
                existing.update_config(config)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close and remove a partition's log (renamed ``*-delete`` first, so
        a crash mid-way finishes the removal at the next start); its future
        log goes first, so a start never mistakes it for a cut swap."""
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
        self.preferred_dirs.pop(key, None)
        self.remove_future_log(topic, partition)
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
        """The current logs (future logs are the replication layer's copies)."""
        return iter(list(self.logs.values()))

    def logs_in(self, directory: Path) -> list[tuple[Log, bool]]:
        """(log, is_future) of every log in ``directory``."""
        current = [(item, False) for key, item in self.logs.items() if self._dir_of[key] == directory]
        return current + [(item, True) for item in self.future_logs.values()
                          if item.dir.parent == directory]

    # -- future logs (moving a replica between log dirs) -------------------------------------
    def maybe_update_preferred_log_dir(self, topic: str, partition: int, directory: Path) -> None:
        """Remember where AlterReplicaLogDirs wants the partition, unless
        its current or future log is there already (Kafka's
        maybeUpdatePreferredLogDir)."""
        key = (topic, partition)
        future = self.future_logs.get(key)
        if self._dir_of.get(key) != directory and (future is None or future.dir.parent != directory):
            self.preferred_dirs[key] = directory

    def create_future_log(self, topic: str, partition: int, directory: Path) -> Log:
        """An empty future log in ``directory`` starting where the current
        log starts. Raises KafkaStorageError (the dir is reported)."""
        key = (topic, partition)
        current = self.logs[key]
        if not self.dirs.is_online(directory):
            raise KafkaStorageError(f"log dir {directory} is offline")
        path = directory / f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
        try:
            future = Log.open(path, current.config)
            if current.log_start_offset > 0:
                future.truncate_fully_and_start_at(current.log_start_offset)
        except (KafkaStorageError, OSError) as exc:
            self.dirs.report(directory, f"cannot create the future log of {topic}-{partition}: {exc}")
            shutil.rmtree(path, ignore_errors=True)
            raise KafkaStorageError(f"cannot create {path}: {exc}") from exc
        self._register(future, directory, is_future=True)
        self.preferred_dirs.pop(key, None)
        log.info("%s-%d: moving from %s to %s", topic, partition, self._dir_of[key], directory)
        return future

    def remove_future_log(self, topic: str, partition: int, delete: bool = True) -> None:
        future = self.future_logs.pop((topic, partition), None)
        if future is None:
            return
        self._logs_in[future.dir.parent] -= 1
        if delete:
            future.delete()
        else:
            _close_files(future)

    def replace_current_with_future_log(self, topic: str, partition: int) -> Log:
        """Swap in the future log, which ends where the current one does
        (the caller checked, with nothing appended since): it takes the
        current log's start offset, leader epochs and producer snapshots, is
        flushed and takes the partition's name; the current log is renamed
        ``-delete`` and goes after ``file.delete.delay.ms``. Returns the new
        current log. Raises KafkaStorageError (the failing dir is reported,
        the renames are undone and the future log is dropped)."""
        key = (topic, partition)
        source, future = self.logs[key], self.future_logs[key]
        source_dir, target_dir = self._dir_of[key], future.dir.parent
        if future.log_end_offset != source.log_end_offset:
            raise ValueError(f"{future} has not caught up with {source}")
        try:
            self._prepare_swap(source, future)
        except (KafkaStorageError, OSError) as exc:
            self._storage_failure(target_dir, exc)
            self._drop_closed_future(key)
            raise KafkaStorageError(f"cannot finish {future.dir}: {exc}") from exc
        doomed = source_dir / f"{topic}-{partition}.{uuid.uuid4().hex}{_DELETED_DIR_SUFFIX}"
        target = target_dir / f"{topic}-{partition}"
        moved = self._rename_swap(key, (source.dir, doomed), (future.dir, target))
        del self.future_logs[key]
        self.logs[key] = moved
        self._dir_of[key] = target_dir
        self._logs_in[source_dir] -= 1
        moved.recovery_point_lowered = self._checkpoint_recovery_point_of
        moved.log_start_offset_moved = self._checkpoint_log_start_offset_of
        source.recovery_point_lowered = source.log_start_offset_moved = None
        self._doomed.append((now_ms() + source.config.file_delete_delay_ms, source, doomed))
        # The target dir's checkpoints name the moved log at once: a crash
        # before the next pass must neither recover it whole nor lower its
        # log start offset. The source dir's stale entry names no log there.
        for name, value in ((RECOVERY_POINT_CHECKPOINT, _recovery_point),
                            (LOG_START_OFFSET_CHECKPOINT, _log_start_offset)):
            try:
                self._checkpoint(name, value, [target_dir])
            except (KafkaStorageError, OSError):
                pass  # reported; the next checkpoint pass writes it
        log.info("%s-%d: moved from %s to %s", topic, partition, source_dir, target_dir)
        return moved

    def _prepare_swap(self, source: Log, future: Log) -> None:
        """The future log completed from the source and closed, on disk."""
        if source.log_start_offset > future.log_start_offset:
            future.maybe_increment_log_start_offset(source.log_start_offset)
        for epoch, start_offset in source.leader_epoch_cache.entries:
            if start_offset >= future.log_start_offset:
                future.leader_epoch_cache.assign(epoch, start_offset)
        _copy_snapshots(source.dir, future.dir)
        future.flush()
        future.close()
        source.flush(sync=False)  # pending index entries: nothing is written there after this
        self._before_delete(source)

    def _rename_swap(self, key: TopicPartition, away: tuple[Path, Path],
                     into: tuple[Path, Path]) -> Log:
        """Rename the source away, the future log into its name, and open
        it there; undo what was done if a step fails."""
        done: list[tuple[Path, Path]] = []
        failed_dir = away[0].parent
        try:
            for before, after in (away, into):
                failed_dir = after.parent
                os.replace(before, after)
                done.append((before, after))
                fsync_dir(after.parent)
            return Log.open(into[1], self.logs[key].config, recovery_point=self.future_logs[key].log_end_offset,
                            log_start_offset=self.future_logs[key].log_start_offset,
                            clean_shutdown=True, create=False)
        except (KafkaStorageError, OSError) as exc:
            for before, after in reversed(done):
                try:
                    os.replace(after, before)
                except OSError:
                    pass
            self._storage_failure(failed_dir, exc)
            self._drop_closed_future(key)
            raise KafkaStorageError(f"cannot move {key[0]}-{key[1]} into {into[1]}: {exc}") from exc

    def _drop_closed_future(self, key: TopicPartition) -> None:
        future = self.future_logs.pop(key, None)
        if future is not None:
            self._logs_in[future.dir.parent] -= 1
            _close_files(future)
            shutil.rmtree(future.dir, ignore_errors=True)

    def _delete_doomed(self, now: int | None = None) -> None:
        """Close and remove the replaced logs whose delay passed (all with None)."""
        due = [item for item in self._doomed if now is None or item[0] <= now]
        self._doomed = [item for item in self._doomed if item not in due]
        for _, old, path in due:
            _close_files(old)
            shutil.rmtree(path, ignore_errors=True)

    # -- failed dirs -------------------------------------------------------------------------
    def handle_log_dir_failure(self, directory: Path, reason: str) -> None:
        """Take ``directory`` offline: its logs leave the manager and their
        files are closed without writing anything more there."""
        if not self.dirs.mark_offline(directory, reason):
            return
        for key in [key for key, where in self._dir_of.items() if where == directory]:
            failed = self.logs.pop(key)
            del self._dir_of[key]
            self._before_delete(failed)
            _close_files(failed)
        for key in [key for key, item in self.future_logs.items() if item.dir.parent == directory]:
            _close_files(self.future_logs.pop(key))
        for key in [key for key, where in self.preferred_dirs.items() if where == directory]:
            del self.preferred_dirs[key]
        self._logs_in.pop(directory, None)
        for directories in self._stale_checkpoints.values():
            directories.discard(directory)
        for item in [item for item in self._doomed if item[2].parent == directory]:
            self._doomed.remove(item)
            _close_files(item[1])

    def _before_delete(self, item: Log) -> None:
        for hook in self.before_delete:
            try:
                hook(item)
            except (KafkaStorageError, OSError) as exc:  # the journal's own dir may be failing
                log.error("%s: %s", item.dir, exc)

    def _storage_failure(self, directory: Path, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.dirs.report(directory, reason)

    # -- background duties ------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """One retention pass over every log, removal of ``.deleted`` files
        whose delay passed (and of logs a move replaced), and the
        log-start-offset checkpoint. Returns the number of segments deleted."""
        deleted = 0
        for (topic, partition), item in list(self.logs.items()):
            high_watermark = self.high_watermark_of(topic, partition) if self.high_watermark_of else None
            deleted += item.delete_old_segments(high_watermark)
            item.delete_expired_files()
        self._delete_doomed(now_ms())
        self.checkpoint_log_start_offsets()
        return deleted

    def flush_dirty_logs(self) -> None:
        """fsync what flush.ms says is due, and every rolled segment not yet
        flushed (keeps recovery to the active segment), then checkpoint the
        recovery points. A log whose flush fails reports its dir; the others
        still flush, and the first failure is raised at the end."""
        self.dirs.check()
        failure: BaseException | None = None
        for item, up_to_offset in self._due_flushes():
            try:
                item.flush(up_to_offset)
            except (KafkaStorageError, OSError) as exc:
                self._storage_failure(item.dir, exc)
                failure = failure or exc
        self.checkpoint_recovery_points()
        if failure is not None:
            raise failure

    def _due_flushes(self) -> list[tuple[Log, int | None]]:
        """(log, offset to flush up to; None: its end) of each log that
        flush_dirty_logs flushes now."""
        due: list[tuple[Log, int | None]] = []
        for item in self._registered_logs():
            if monotonic_ms(item.clock) - item.last_flush_ms >= item.config.flush_ms:
                due.append((item, None))
            elif item.recovery_point < item.active_segment.base_offset:
                due.append((item, item.active_segment.base_offset))
        return due

    async def write_back_dirty_logs(self) -> None:
        """flush_dirty_logs, its data written back first by a worker thread.

        A rolled segment is fsynced by the next pass, with what the kernel
        has not written back yet: up to 30 s of its partition's writes
        (vm.dirty_expire_centisecs), and partitions at one rate roll
        together. On the event loop each such fdatasync stopped every
        request for the time the disk took. Here a worker thread syncs the
        segments' files first; the pass on the loop then finds their pages
        written and only asks the disk to flush its cache. A segment closed
        meanwhile fails its sync on the worker (ignored) and is not in the
        pass."""
        fds = [fd for item, up_to_offset in self._due_flushes() for fd in item.unflushed_fds(up_to_offset)]
        if fds:
            await asyncio.get_running_loop().run_in_executor(None, _write_back, fds)
        # Decided again, not reused: logs may have rolled, closed or come
        # due during the wait (a pass over the logs, once a minute).
        self.flush_dirty_logs()

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint(RECOVERY_POINT_CHECKPOINT, _recovery_point)

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

    def write_stale_checkpoints(self) -> None:
        """Write now the checkpoints ``_checkpoint_soon`` has pending: a
        DeleteRecords answer promises a start offset that survives a crash
        right after it."""
        if self._stale_checkpoints:
            self._write_stale_checkpoints(None)

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
        self._checkpoint(LOG_START_OFFSET_CHECKPOINT, _log_start_offset)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """``replication-offset-checkpoint`` of each online log dir: the
        high watermark of each partition it holds (the replication layer owns
        the values; a restarted replica starts from them)."""
        self._write_per_dir(REPLICATION_OFFSET_CHECKPOINT, lambda directory: {
            key: value for key, value in high_watermarks.items()
            if self._dir_of.get(key) == directory}, self.dirs.online)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        found: dict[TopicPartition, int] = {}
        for directory in self.dirs.online:
            found.update(self._read_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT))
        return found

    def _checkpoint(self, name: str, value: Callable[[Log], int],
                    directories: Sequence[Path] | None = None) -> None:
        """One checkpoint file per dir, of its current and future logs."""
        def offsets(directory: Path) -> dict[TopicPartition, int]:
            return {(item.topic, item.partition): value(item)
                    for item, _ in self.logs_in(directory)}

        self._write_per_dir(name, offsets, directories or self.dirs.online)

    def _write_per_dir(self, name: str, offsets: Callable[[Path], dict[TopicPartition, int]],
                       directories: Sequence[Path]) -> None:
        """Write ``name`` in each online dir; a dir whose write fails is
        reported, the others are written, the first failure is raised."""
        failure: BaseException | None = None
        for directory in directories:
            if not self.dirs.is_online(directory):
                continue
            try:
                OffsetCheckpointFile(directory / name).write(offsets(directory))
            except (KafkaStorageError, OSError) as exc:
                self._storage_failure(directory, exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    # -- shutdown ---------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Clean shutdown: write and close every log (leader epoch files
        staged), sync each log dir's filesystem once (not ~4 fsyncs per
        partition), rename the staged files and sync again, then write both
        checkpoints and leave ``.kafka_cleanshutdown`` in each online dir."""
        self._stop_write_behind()
        staged = StagedRenames()
        for item in self._registered_logs():
            item.flush(sync=False, staged=staged)
            item.close(sync=False, staged=staged)
        self._delete_doomed()
        self._sync_filesystems()
        staged.commit()
        self._sync_filesystems()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for directory in self.dirs.online:
            (directory / CLEAN_SHUTDOWN_FILE).touch()
            fsync_dir(directory)
        self.logs.clear()
        self.future_logs.clear()
        self._dir_of.clear()
        self._logs_in.clear()
        self._release_locks()

    def _sync_filesystems(self) -> None:
        """syncfs once per filesystem holding an online log dir."""
        devices = set()
        for directory in self.dirs.online:
            device = directory.stat().st_dev
            if device not in devices:
                devices.add(device)
                sync_filesystem(directory)

    def _stop_write_behind(self) -> None:
        """Before the logs close: the worker's last calls name their files."""
        if self.write_behind is not None:
            self.write_behind.close()

    def _close_all(self) -> None:
        self._stop_write_behind()
        for item in self._registered_logs():
            item.close()
        self.logs.clear()
        self.future_logs.clear()
        self._delete_doomed()
        self._release_locks()

    def _release_locks(self) -> None:
        for fd in self._locks:
            os.close(fd)
        self._locks = []


def _recovery_point(item: Log) -> int:
    return item.recovery_point


def _log_start_offset(item: Log) -> int:
    return item.log_start_offset


def _key_of(path: Path) -> TopicPartition:
    renamed = _RENAMED_DIR.match(path.name)
    if renamed is not None:
        return renamed["topic"], int(renamed["partition"])
    topic, _, partition = path.name.rpartition("-")
    return topic, int(partition)


def _copy_snapshots(source: Path, target: Path) -> None:
    """The producer state snapshots of ``source`` into ``target`` (a
    replaced log's partition keeps replaying from them, not from its start)."""
    for snapshot in source.glob(f"*{SNAPSHOT_SUFFIX}"):
        shutil.copyfile(snapshot, target / snapshot.name)


def _close_files(item: Log) -> None:
    """Close a log whose directory failed or was renamed away: whatever
    cannot be written is given up, every file descriptor is closed."""
    try:
        item.close(sync=False)
    except (KafkaStorageError, OSError) as exc:
        log.warning("%s: closed without writing its last changes: %s", item.dir, exc)
        for segment in item.segments:
            if segment.fd >= 0:
                os.close(segment.fd)
                segment.fd = -1


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), reverse=True):
        if child.is_dir():
            child.rmdir()
        else:
            child.unlink()
    path.rmdir()


def _write_back(fds: list[int]) -> None:
    """On a worker thread: fdatasync each file, ignoring failures (the
    flush on the loop that follows syncs again and reports them)."""
    for fd in fds:
        try:
            os.fdatasync(fd)
        except OSError:
            pass

"""The directories of ``log.dirs`` and which of them are online.

Kafka's LogManager keeps the set of live log dirs, and its
LogDirFailureChannel carries an I/O error from wherever it shows to the
one handler that takes the dir offline. Here ``report(directory,
reason)`` is called by the log manager (a failed flush, checkpoint or log
creation) and by the partitions (a failed append or read), and ``check``
runs on the flush timer: a dir whose path no longer leads to the
directory locked at start (unmounted, removed or replaced) has failed as
well. The handler (``on_failure``) runs on the next turn of the event
loop, once per dir, so never inside the operation that failed.

A broker keeps its last online dir: a failure there is handled as a lone
log dir's always was (each failed write answers KAFKA_STORAGE_ERROR and
writes resume once the cause is gone, docs/storage.md), where Kafka stops
the broker.

Paths are absolute (``os.path.abspath``), as Kafka answers and compares
them in DescribeLogDirs and AlterReplicaLogDirs.

Not thread-safe: the event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

FailureHandler = Callable[[Path, str], None]


def absolute(path: Path | str) -> Path:
    return Path(os.path.abspath(os.fspath(path)))


class LogDirs:
    def __init__(self, paths: Sequence[Path | str]):
        self.paths = [absolute(path) for path in paths]
        if not self.paths:
            raise ValueError("log.dirs is empty")
        if len(set(self.paths)) != len(self.paths):
            raise ValueError(f"log.dirs names a directory twice: {[str(p) for p in self.paths]}")
        self.offline: dict[Path, str] = {}
        self.on_failure: FailureHandler | None = None
        self._identity: dict[Path, tuple[int, int]] = {}
        self._reported: set[Path] = set()

    @property
    def online(self) -> list[Path]:
        return [path for path in self.paths if path not in self.offline]

    def is_online(self, path: Path) -> bool:
        return path in self.paths and path not in self.offline

    def find(self, text: str) -> Path | None:
        """The configured log dir ``text`` names (an absolute path), or None."""
        if not text or not os.path.isabs(text):
            return None
        wanted = absolute(text)
        return wanted if wanted in self.paths else None

    def remember(self, path: Path) -> None:
        """The directory just locked at ``path``: ``check`` compares with it."""
        status = os.stat(path)
        self._identity[path] = (status.st_dev, status.st_ino)

    @staticmethod
    def usage(path: Path) -> tuple[int, int]:
        """(total bytes, usable bytes) of the volume holding ``path``, as
        Kafka's FileStore getTotalSpace / getUsableSpace."""
        status = os.statvfs(path)
        return status.f_blocks * status.f_frsize, status.f_bavail * status.f_frsize

    # -- failures ------------------------------------------------------------------------
    def mark_offline(self, path: Path, reason: str) -> bool:
        """Take ``path`` offline now; False when it was already."""
        if path in self.offline or path not in self.paths:
            return False
        self.offline[path] = reason
        log.error("log dir %s is offline: %s", path, reason)
        return True

    def report(self, path: Path, reason: str) -> None:
        """An I/O error in ``path`` (a log dir, or any path inside one)."""
        directory = self.containing(path)
        if directory is None or directory in self.offline or directory in self._reported:
            return
        if self.online == [directory]:
            log.warning("%s failed (%s); it is the last online log dir, so it stays online",
                        directory, reason)
            return
        self._reported.add(directory)
        try:
            asyncio.get_running_loop().call_soon(self._fail, directory, reason)
        except RuntimeError:  # no event loop (tools, tests): at once
            self._fail(directory, reason)

    def _fail(self, directory: Path, reason: str) -> None:
        self._reported.discard(directory)
        if directory in self.offline:
            return
        if self.online == [directory]:  # another dir went offline meanwhile
            log.warning("%s failed (%s); it is the last online log dir, so it stays online",
                        directory, reason)
            return
        if self.on_failure is not None:
            self.on_failure(directory, reason)
        else:
            self.mark_offline(directory, reason)

    def containing(self, path: Path | str) -> Path | None:
        """The log dir that is ``path`` or holds it."""
        candidate = absolute(path)
        for directory in self.paths:
            if candidate == directory or directory in candidate.parents:
                return directory
        return None

    def check(self) -> None:
        """Report each online dir whose path leads elsewhere than the
        directory locked at start (or nowhere)."""
        for path in self.online:
            expected = self._identity.get(path)
            if expected is None:
                continue
            try:
                status = os.stat(path)
                found = (status.st_dev, status.st_ino)
            except OSError as exc:
                self.report(path, f"cannot stat the directory: {exc.strerror}")
                continue
            if found != expected:
                self.report(path, "the directory was removed or unmounted")

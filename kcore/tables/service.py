"""The table writers of one broker: a writer task for each topic with
``kcore.table.mode`` on that has partitions led here, started when the
first such partition appears (a topic created or altered, a leadership
gained) and ended by itself when none is left.

All Iceberg work of the broker runs in one worker thread (``Worker``), in
turn: the SQLite catalog is not to be shared between threads, and one
thread bounds what tables take from the broker's core.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor

from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager
from kcore.tables.settings import CatalogSettings, topic_settings
from kcore.tables.writer import TableStats, TopicTableWriter, Worker

log = logging.getLogger(__name__)

SCAN_S = 0.5
RESTART_BACKOFF_S = 5.0


class TableService:
    def __init__(self, catalog: CatalogSettings, replica_manager: ReplicaManager):
        self.catalog = catalog
        self.replica_manager = replica_manager
        self.stats: dict[str, TableStats] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kcore-tables")
        self._worker = Worker(catalog)
        self._writers: dict[str, asyncio.Task] = {}
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="tables")

    async def close(self) -> None:
        tasks = [task for task in (self._task, *self._writers.values()) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # A commit in the worker thread cannot be cut; it ends on its own
        # (a crash there leaves the table at its last snapshot).
        self._executor.shutdown(wait=False, cancel_futures=True)

    def led(self, topic: str) -> dict[int, Partition]:
        """The partitions of ``topic`` this broker leads, while tables are on."""
        return {partition.index: partition for partition in self.replica_manager.topic_partitions(topic)
                if partition.is_leader and topic_settings(partition.configs).enabled}

    async def _run(self) -> None:
        while True:
            for topic in self._topics_with_tables():
                task = self._writers.get(topic)
                if task is None or task.done():
                    self._start_writer(topic)
            for topic in [t for t, task in self._writers.items() if task.done()]:
                del self._writers[topic]
            await asyncio.sleep(SCAN_S)

    def _topics_with_tables(self) -> set[str]:
        return {partition.topic for partition in self.replica_manager.leader_partitions()
                if topic_settings(partition.configs).enabled}

    def _start_writer(self, topic: str) -> None:
        stats = self.stats.setdefault(topic, TableStats())
        writer = TopicTableWriter(topic, lambda: self.led(topic), self._executor, self._worker, stats)
        self._writers[topic] = asyncio.get_running_loop().create_task(self._guard(writer), name=f"table {topic}")
        log.info("writing topic %s to its table", topic)

    @staticmethod
    async def _guard(writer: TopicTableWriter) -> None:
        """A writer's unexpected failure is logged and waited out before
        the scan starts the topic's writer again."""
        try:
            await writer.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            writer.stats.commit_errors += 1
            log.exception("the table writer of %s failed", writer.topic)
            await asyncio.sleep(RESTART_BACKOFF_S)

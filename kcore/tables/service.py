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
import concurrent.futures
import contextlib
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.registry import SchemaRegistry
from kcore.schema_registry.schema_types import ParsedSchema
from kcore.tables.settings import CatalogSettings, topic_settings
from kcore.tables.writer import TableStats, TopicTableWriter, Worker

log = logging.getLogger(__name__)

SCAN_S = 0.5
RESTART_BACKOFF_S = 5.0
# A schema lookup of the worker thread waits this long for the event loop
# (and the registry's catch-up with its primary, 5 s at most).
LOOKUP_TIMEOUT_S = 10.0


class TableService:
    def __init__(self, catalog: CatalogSettings, replica_manager: ReplicaManager,
                 registry: SchemaRegistry | None = None, sync: Callable[[], Awaitable[None]] | None = None):
        """``registry`` decodes value_schema topics; ``sync`` catches it up
        with its primary (a schema id it does not know yet)."""
        self.catalog = catalog
        self.replica_manager = replica_manager
        self.stats: dict[str, TableStats] = {}
        self._registry = registry
        self._sync = sync
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kcore-tables")
        self._worker = Worker(catalog, self._lookup if registry is not None else None)
        self._writers: dict[str, asyncio.Task] = {}
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name="tables")

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

    def _lookup(self, schema_id: int) -> ParsedSchema:
        """In the worker thread: the registered schema ``schema_id``, asked
        of the registry on the event loop that owns it; LookupError when
        it is not registered or the loop does not answer in time."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._parsed(schema_id), self._loop)
        try:
            return future.result(LOOKUP_TIMEOUT_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise LookupError("the schema registry did not answer in time") from None

    async def _parsed(self, schema_id: int) -> ParsedSchema:
        assert self._registry is not None
        try:
            try:
                record = self._registry.schema_by_id(schema_id)
            except RegistryError:
                if self._sync is None:
                    raise
                await self._sync()  # registered through another broker a moment ago, maybe
                record = self._registry.schema_by_id(schema_id)
            return self._registry.parse_record(record)
        except RegistryError as exc:
            raise LookupError(exc.message) from None

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

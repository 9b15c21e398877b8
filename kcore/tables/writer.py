"""One topic's table writer on one broker: reads the committed records of
the partitions this broker leads from their local logs and commits them
to the topic's table every ``kcore.table.commit.interval.ms``.

The event loop only reads the log (file slices and ``os.pread``: the
page cache, a few hundred microseconds per MiB) and keeps the cursors;
decoding records, building Arrow rows, writing Parquet and committing run
in the service's one worker thread, so the produce path waits for none of
it. Memory is bounded: a partition reads ``READ_BYTES`` at a time and stops
reading while its uncommitted rows pass ``PARTITION_PENDING_BYTES``, and
the topic commits early once its rows pass ``TOPIC_PENDING_BYTES``.

Not thread-safe: the cursors belong to the event loop; the worker thread
gets copies of what it needs.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from kcore.client.fetch import FetchedPartition, records_from
from kcore.protocol.constants import READ_COMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError
from kcore.tables.settings import CatalogSettings, TopicTableSettings, topic_settings

log = logging.getLogger(__name__)

READ_BYTES = 1 << 20
# Reads of one partition in one step, at most, before the others get
# theirs: 8 MiB, so a backlog drains at tens of MB/s, not 1 MiB a poll.
READS_PER_STEP = 8
# Arrow's in-memory size is about the records' decoded size: 64 MiB per
# partition and 256 MiB per topic keep a backfill of a large log in check.
PARTITION_PENDING_BYTES = 64 << 20
TOPIC_PENDING_BYTES = 256 << 20
# How often the writer looks for new records, at most; the commit
# interval decides how often the table gets them.
POLL_S = 0.2
COMMIT_ATTEMPTS = 5
# A failing catalog or disk is retried after 1 s, then 2, 4 ... up to 30.
RETRY_BACKOFF_S = (1.0, 30.0)


@dataclass
class Cursor:
    """Where one partition stands: ``base`` is the table's offset (None:
    the table has none for it) that ``pending`` continues from, and
    ``position`` the next offset to read."""

    base: int | None
    position: int
    pending: list[Any] = field(default_factory=list)  # pyarrow Tables
    pending_bytes: int = 0
    pending_records: int = 0

    def committed(self) -> None:
        self.base = self.position
        self.pending, self.pending_bytes, self.pending_records = [], 0, 0


@dataclass
class TableStats:
    """One topic's figures for /metrics and ``kcore tables describe``."""

    commits: int = 0
    commit_seconds: float = 0.0
    commit_errors: int = 0
    records: int = 0
    last_commit_wall_ms: int | None = None
    committed: dict[int, int] = field(default_factory=dict)
    lag: dict[int, int] = field(default_factory=dict)


class TopicTableWriter:
    def __init__(self, topic: str, led: Callable[[], dict[int, Partition]], executor: Executor,
                 worker: Any, stats: TableStats):
        """``led`` gives the partitions of ``topic`` this broker leads with
        tables on; ``worker`` is the service's thread-side object (its
        ``table``, ``offsets``, ``rows`` and ``commit`` run in ``executor``)."""
        self.topic = topic
        self._led = led
        self._executor = executor
        self._worker = worker
        self.stats = stats
        self._cursors: dict[int, Cursor] = {}
        self._table: Any = None
        self._last_commit = 0.0

    async def run(self) -> None:
        """Until no partition of the topic is led here with tables on."""
        loop = asyncio.get_running_loop()
        self._last_commit = loop.time()
        backoff = RETRY_BACKOFF_S[0]
        while True:
            partitions = self._led()
            if not partitions:
                return
            settings = topic_settings(next(iter(partitions.values())).configs)
            try:
                await self._step(partitions, settings, loop.time())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the writer reports and retries; produce and fetch go on
                self.stats.commit_errors += 1
                log.warning("table of %s: %s; retrying in %.0fs", self.topic, exc, backoff,
                            exc_info=log.isEnabledFor(logging.DEBUG))
                self._table = None
                self._cursors.clear()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_S[1])
                continue
            backoff = RETRY_BACKOFF_S[0]
            await asyncio.sleep(POLL_S)

    async def _step(self, partitions: dict[int, Partition], settings: TopicTableSettings, now: float) -> None:
        if self._table is None:
            compression = next(iter(partitions.values())).configs.get("compression.type", "producer")
            self._table = await self._call(self._worker.table, self.topic, settings, compression)
        for index in [i for i in self._cursors if i not in partitions]:
            del self._cursors[index]  # leadership moved: the new leader resumes from the table
        new = [index for index in partitions if index not in self._cursors]
        if new:
            offsets = await self._call(self._worker.offsets, self._table)
            for index in new:
                partition = partitions[index]
                start = max(offsets.get(index, 0), partition.log_start_offset)
                self._cursors[index] = Cursor(offsets.get(index), start)
        for index, partition in partitions.items():
            for _ in range(READS_PER_STEP):
                if not await self._read(index, partition, self._cursors[index]):
                    break
        self._update_lag(partitions)
        pending = sum(cursor.pending_bytes for cursor in self._cursors.values())
        due = now - self._last_commit >= settings.commit_interval_ms / 1000
        if any(cursor.pending_records for cursor in self._cursors.values()) and (due or pending >= TOPIC_PENDING_BYTES):
            await self._commit()
            self._last_commit = asyncio.get_running_loop().time()
            self._update_lag(partitions)

    async def _read(self, index: int, partition: Partition, cursor: Cursor) -> bool:
        """One read of up to READ_BYTES; False when there was nothing to read
        (caught up, or the partition's rows fill their share)."""
        if cursor.pending_bytes >= PARTITION_PENDING_BYTES:
            return False
        if cursor.position < partition.log_start_offset:
            log.warning("table of %s-%d: offsets %d to %d were deleted from the log before the table got "
                        "them", self.topic, index, cursor.position, partition.log_start_offset - 1)
            cursor.position = partition.log_start_offset
        upper = partition.last_stable_offset
        if cursor.position >= upper:
            return False
        try:
            slices = partition.read(cursor.position, READ_BYTES, read_committed=True, min_one_message=True)
        except PartitionError as exc:
            if exc.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                return False  # truncated or moved under us: the next step reads again
            raise
        data = b"".join(os.pread(s.fd, s.size, s.position) for s in slices)
        aborted = tuple((txn.producer_id, txn.first_offset)
                        for txn in partition.log.collect_aborted_txns(cursor.position, upper))
        fetched = FetchedPartition(self.topic, index, ErrorCode.NONE, partition.high_watermark, upper,
                                   partition.log_start_offset, data, aborted)
        rows, next_offset = await self._call(self._worker.rows, self._table, fetched, cursor.position, upper)
        if rows is not None:
            cursor.pending.append(rows)
            cursor.pending_bytes += rows.nbytes
            cursor.pending_records += rows.num_rows
        moved = next_offset > cursor.position
        cursor.position = max(cursor.position, next_offset)
        return moved

    async def _commit(self) -> None:
        for _ in range(COMMIT_ATTEMPTS):
            writing = {index: cursor for index, cursor in self._cursors.items() if cursor.position != cursor.base}
            if not any(cursor.pending_records for cursor in writing.values()):
                return
            started = time.monotonic()
            result = await self._call(self._worker.commit, self._table,
                                      [rows for cursor in writing.values() for rows in cursor.pending],
                                      {index: cursor.base for index, cursor in writing.items()},
                                      {index: cursor.position for index, cursor in writing.items()})
            if isinstance(result, dict):
                self.stats.commits += 1
                self.stats.commit_seconds += time.monotonic() - started
                self.stats.records += sum(cursor.pending_records for cursor in writing.values())
                self.stats.last_commit_wall_ms = int(time.time() * 1000)
                for cursor in writing.values():
                    cursor.committed()
                return
            stale, current = result
            for index in stale:  # another writer wrote these: read again from where it left them
                log.info("table of %s-%d: written by another writer up to %s; reading again from there",
                         self.topic, index, current.get(index))
                self._cursors.pop(index, None)
            if stale:
                self._cursors_from(current)
        raise RuntimeError(f"no commit after {COMMIT_ATTEMPTS} attempts (concurrent writers)")

    def _cursors_from(self, current: dict[int, int]) -> None:
        partitions = self._led()
        for index, partition in partitions.items():
            if index not in self._cursors:
                self._cursors[index] = Cursor(current.get(index),
                                              max(current.get(index, 0), partition.log_start_offset))

    def _update_lag(self, partitions: dict[int, Partition]) -> None:
        self.stats.committed = {i: c.base for i, c in self._cursors.items() if c.base is not None}
        self.stats.lag = {i: max(0, p.last_stable_offset - (self._cursors[i].base or p.log_start_offset))
                          for i, p in partitions.items() if i in self._cursors}

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)


class Worker:
    """What runs in the service's worker thread: the catalog (opened on
    first use), and the calls the writers make. One thread only: the
    SQLite catalog is not shared between threads."""

    def __init__(self, settings: CatalogSettings):
        self.settings = settings
        self._catalog: Any = None

    def table(self, topic: str, settings: TopicTableSettings, compression: str) -> Any:
        from kcore.tables import catalog
        if self._catalog is None:
            self._catalog = catalog.open_catalog(self.settings)
        return catalog.load_or_create(self._catalog, topic, settings, compression)

    @staticmethod
    def offsets(table: Any) -> dict[int, int]:
        from kcore.tables import catalog
        return catalog.refreshed_offsets(table)

    @staticmethod
    def rows(table: Any, fetched: FetchedPartition, position: int, upper: int) -> tuple[Any, int]:
        """The rows of the records in ``fetched`` from ``position`` below
        ``upper`` (aborted transactions left out), and the next offset."""
        from kcore.tables.rows import key_value_rows
        result = records_from(fetched, position, isolation_level=READ_COMMITTED)
        records = [record for record in result.records if record.offset is not None and record.offset < upper]
        next_offset = min(result.next_offset, upper)
        if not records:
            return None, next_offset
        return key_value_rows(fetched.partition, records, table.schema().as_arrow()), next_offset

    @staticmethod
    def commit(table: Any, rows: list[Any], expected: dict[int, int | None],
               offsets: dict[int, int]) -> dict[int, int] | tuple[set[int], dict[int, int]]:
        """The offsets after the commit, or (stale partitions, the table's
        offsets) when another writer got there first."""
        import pyarrow as pa

        from kcore.tables import catalog
        try:
            return catalog.commit(table, pa.concat_tables(rows), expected, offsets)
        except catalog.StaleBase as exc:
            return exc.partitions, exc.current
        except catalog.CommitFailedException:
            return set(), catalog.refreshed_offsets(table)
